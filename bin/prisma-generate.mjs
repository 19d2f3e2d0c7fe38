#!/usr/bin/env node
// npm postinstall: generates the Prisma client (prisma/generated). Needs no database.
// The Prisma CLI looks for its native schema engine before every command and downloads it when
// missing; offline that download fails. `generate` itself only uses WASM, so when the engine is
// absent we point PRISMA_SCHEMA_ENGINE_BINARY at node (any existing executable will do) for this
// one run. With internet, @prisma/engines' own postinstall has usually fetched the engine: normal
// path. Either way nothing is printed about it: the engine's absence says nothing about being
// offline (a reinstall, a proxy, an install without dependency scripts), nothing of this project
// needs it (migrations run on the WASM engine, prisma/migrate.ts), and a Prisma command that does
// need it downloads it then, or says clearly why it cannot.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));

let cli;
let enginesDir;
try {
  const prismaPkg = require.resolve('prisma/package.json');
  cli = join(dirname(prismaPkg), 'build', 'index.js');
  enginesDir = dirname(createRequire(prismaPkg).resolve('@prisma/engines/package.json'));
} catch {
  console.log('prisma-generate: the prisma package is not installed; skipping client generation');
  process.exit(0);
}

const env = { ...process.env };
const hasNativeEngine = readdirSync(enginesDir).some((f) => f.startsWith('schema-engine'));
if (!env.PRISMA_SCHEMA_ENGINE_BINARY && !hasNativeEngine) env.PRISMA_SCHEMA_ENGINE_BINARY = process.execPath;

const res = spawnSync(process.execPath, [cli, 'generate'], { cwd: root, env, stdio: 'inherit' });
if (res.error) {
  console.error(`prisma-generate: could not run prisma generate: ${res.error.message}`);
  process.exit(1);
}
process.exit(res.status ?? 1);
