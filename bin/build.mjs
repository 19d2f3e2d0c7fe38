// `npm run build`: the processes' TypeScript compiled to JavaScript in dist/ (esbuild, file by file,
// the same tree, no bundling), so production processes run plain Node: no TypeScript loader in
// memory (about 35 MB of an API process) and nothing transpiled at start-up. `npm run api` builds
// first (well under a second) and runs dist/bin/api.js; development (`npm start`, tests) runs the
// sources through tsx. Files the code reads next to itself (*.mjs workers, migrations, the Prisma
// schema) are copied beside their compiled neighbours. The workflow code is bundled ahead of time
// (dist/workflow-bundle.js, Temporal's webpack + swc), so the worker loads it instead of bundling its
// workflows at every start. `npm run build --ts-only` (or SWITCHYARD_BUILD_TS_ONLY=1) skips that.
import { cpSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
const compiled = Date.now();
if (!process.env.SWITCHYARD_BUILD_TS_ONLY && !process.argv.includes('--ts-only')) {
  // loaded only here: the SDK's bundler (webpack, swc) is large
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(root, 'workflows', 'index.ts'),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  writeFileSync(join(out, 'workflow-bundle.js'), code);
}
if (process.env.npm_lifecycle_event === 'build') {
  console.log(
    `built ${entryPoints.length} files into dist/ in ${compiled - started} ms, ` +
      `the workflow bundle in ${Date.now() - compiled} ms`,
  );
}
