#!/usr/bin/env node
// `npm run lint` runs this: no production file (everything but test/ and bench/) longer than
// MAX_LINES, so that each can be read in one sitting. A file that grows past it is split by
// responsibility into modules named for what they do. Function length is Biome's rule
// (complexity/noExcessiveLinesPerFunction in biome.json); a function that must stay longer says
// why in its `biome-ignore` comment.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MAX_LINES = 400;
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;
const NOT_PRODUCTION = /^(test|bench)\//;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// tracked and new files alike, without what .gitignore leaves out (node_modules, generated code)
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
  cwd: root,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => SOURCE.test(f) && !NOT_PRODUCTION.test(f));

const tooLong = [];
for (const file of files) {
  let text;
  try {
    text = readFileSync(join(root, file), 'utf8');
  } catch {
    continue; // deleted from the work tree, not yet from the index
  }
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > MAX_LINES) tooLong.push(`${file}: ${lines} lines`);
}

if (tooLong.length) {
  console.error(`Production files longer than ${MAX_LINES} lines (split them by responsibility):`);
  for (const line of tooLong) console.error(`  ${line}`);
  process.exitCode = 1;
}
