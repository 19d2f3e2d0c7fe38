// What `npm install` prints of its own: the Prisma client generation (bin/prisma-generate.mjs) works
// without Prisma's native schema engine and does not guess aloud why the engine is absent (it used to
// say "offline install" on machines that were online).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const script = path.join(root, 'bin', 'prisma-generate.mjs');

function run(env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [script], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

describe('npm install: Prisma client generation', function () {
  this.timeout(60_000);

  it('generates the client and says nothing about the native schema engine', async () => {
    const env = { ...process.env };
    delete env.PRISMA_SCHEMA_ENGINE_BINARY;
    const { code, output } = await run(env);
    assert.equal(code, 0, output);
    assert.match(output, /Generated Prisma Client/);
    assert.doesNotMatch(output, /schema engine|offline/i, output);
    assert.ok(existsSync(path.join(root, 'prisma', 'generated', 'client.ts')));
  });
});
