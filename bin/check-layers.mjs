#!/usr/bin/env node
// The layering ARCHITECTURE.md writes down, checked on every `npm run lint` so a change cannot
// quietly undo it. Every import of our own code is read (`import`, `import type`, `export ... from`,
// dynamic `import()`), and:
//   - nothing under activities/ or workflows/ imports api/ (HTTP stays in api/);
//   - providers (activities/providers/) import no surface (activities/surfaces/, api/);
//   - activities/core/ imports nothing of ours outside activities/core/;
//   - no two modules import each other, directly or round about, type-only imports included.
// Biome's noImportCycles finds cycles too; this check also names every module of one and runs
// the folder rules, which Biome's per-file import restrictions cannot say about relative paths.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const scanned = ['activities', 'api', 'workflows', 'bin'];

/** [folder a module is in, folder it may not import, why] */
const forbidden = [
  ['activities/', 'api/', 'nothing under activities/ imports api/'],
  ['workflows/', 'api/', 'nothing under workflows/ imports api/'],
  ['activities/providers/', 'activities/surfaces/', 'providers import no surface'],
];
const core = 'activities/core/';

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'generated') continue;
    if (statSync(path).isDirectory()) walk(path, out);
    else if (/\.(ts|mjs)$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const importRe = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Our modules a file imports, as paths relative to the repository. */
function importsOf(file) {
  const text = readFileSync(file, 'utf8').replace(/^\s*\/\/.*$/gm, '');
  const found = new Set();
  for (const m of text.matchAll(importRe)) {
    const spec = m[1] ?? m[2];
    if (!spec.startsWith('.')) continue;
    const target = relative(root, resolve(dirname(file), spec)).replace(/\.js$/, '.ts');
    found.add(target);
  }
  return [...found];
}

const files = scanned.flatMap((d) => walk(join(root, d), [])).map((f) => relative(root, f));
const graph = new Map(files.map((f) => [f, importsOf(join(root, f))]));
const problems = [];

for (const [file, targets] of graph) {
  for (const target of targets) {
    for (const [from, to, why] of forbidden)
      if (file.startsWith(from) && target.startsWith(to)) problems.push(`${file} imports ${target}: ${why}`);
    if (file.startsWith('activities/providers/') && target.startsWith('api/'))
      problems.push(`${file} imports ${target}: providers import no surface`);
    if (file.startsWith(core) && !target.startsWith(core))
      problems.push(`${file} imports ${target}: activities/core imports nothing of ours outside activities/core`);
  }
}

// Tarjan's strongly connected components: every component of more than one module is a cycle.
let index = 0;
const stack = [];
const state = new Map();
function visit(v) {
  const s = { index, low: index, on: true };
  index++;
  state.set(v, s);
  stack.push(v);
  for (const w of graph.get(v) ?? []) {
    if (!graph.has(w)) continue;
    const t = state.get(w);
    if (!t) {
      visit(w);
      s.low = Math.min(s.low, state.get(w).low);
    } else if (t.on) s.low = Math.min(s.low, t.index);
  }
  if (s.low !== s.index) return;
  const component = [];
  let w;
  do {
    w = stack.pop();
    state.get(w).on = false;
    component.push(w);
  } while (w !== v);
  if (component.length > 1) problems.push(`import cycle: ${component.sort().join(' <-> ')}`);
}
for (const v of graph.keys()) if (!state.has(v)) visit(v);

if (problems.length) {
  console.error(`Layering (ARCHITECTURE.md) broken:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`layers: ${graph.size} modules, no forbidden import, no cycle`);
