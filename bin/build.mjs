// `npm run build`: the processes' TypeScript compiled to JavaScript in dist/ (esbuild, file by file,
// the same tree, no bundling), so production processes run plain Node: no TypeScript loader in
// memory (about 35 MB of an API process) and nothing transpiled at start-up. `npm run api` builds
// first (well under a second) and runs dist/bin/api.js; development (`npm start`, tests) runs the
// sources through tsx. Files the code reads next to itself (*.mjs workers, migrations, the Prisma
// schema) are copied beside their compiled neighbours.
import { cpSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist');
const SOURCES = ['api', 'activities', 'bin', 'prisma', 'workflows', 'temporal-dev'];
const COPIED = [/\.mjs$/, /^prisma\/schema\.prisma$/, /^prisma\/migrations\//];

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [relative(root, path)];
  });
}

const files = SOURCES.filter((d) => existsSync(join(root, d))).flatMap((d) => walk(join(root, d)));
const entryPoints = files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
const started = Date.now();
rmSync(out, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints,
  outdir: out,
  outbase: '.',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  bundle: false,
  sourcemap: 'linked',
  logLevel: 'warning',
});
for (const f of files.filter((f) => COPIED.some((p) => p.test(f)))) cpSync(join(root, f), join(out, f));
if (process.env.npm_lifecycle_event === 'build') {
  console.log(`built ${entryPoints.length} files into dist/ in ${Date.now() - started} ms`);
}
