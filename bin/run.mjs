// `npm run api | worker | ops`: runs the compiled process from dist/ (`npm run build`), in this
// process (so the script's Node flags apply). Without a build it runs the sources through tsx, as
// development does, and says so: production builds first, and runs with its production dependencies only.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const name = process.argv[2];
if (!['api', 'worker', 'ops'].includes(name ?? '')) {
  console.error('usage: node bin/run.mjs api|worker|ops [args]');
  process.exit(2);
}
const compiled = join(root, 'dist', 'bin', `${name}.js`);
let entry = compiled;
if (!existsSync(compiled)) {
  entry = join(root, 'bin', `${name}.ts`);
  const { register } = await import('tsx/esm/api');
  register();
  process.execArgv.push('--import', 'tsx/esm'); // for the processes `api` forks (SWITCHYARD_API_PROCESSES)
  if (name !== 'ops') console.error(`[${name}] no build in dist/ (npm run build): running the sources through tsx`);
}
// the entry checks process.argv[1] to know it is the program, not an import
process.argv.splice(1, 2, entry);
await import(pathToFileURL(entry).href);
