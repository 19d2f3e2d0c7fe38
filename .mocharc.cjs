// `npm test`: every test file (the unit tier in test/unit/ included), in parallel worker processes,
// each with its own database and Temporal server (test/support/hooks.ts). SWITCHYARD_TEST_JOBS sets
// the number of workers (default 4: most of a file's time is spent waiting on servers and timers, not
// on the CPU); 1 runs the files one after another in this process. `npm run test:unit` has its own
// config (.mocharc.unit.cjs); `npm run test:one -- <files>` runs chosen files serially.
const { readdirSync } = require('node:fs');

const jobs = Math.max(1, Number(process.env.SWITCHYARD_TEST_JOBS) || 4);

// The files that take longest (measured), handed out first: a long file started last would keep one
// worker busy after the others have finished. The rest follow in name order.
const SLOWEST = [
  'production-build', // with SWITCHYARD_TEST_PRODUCTION_BUILD=1 (CI); skipped otherwise
  'video-faults',
  'speech-job-faults',
  'fuzz/fuzz',
  'deposits',
  'ops',
  'message-batches',
  'batch-faults',
  'video',
  'start',
  'tts',
  'batches',
  'leases',
  'embeddings',
  'api-processes',
  'speech',
  'embedded-postgres',
  'unit/redaction-detection',
  'redaction-matrix',
  'replay',
  'files',
  'key-changes',
  'redaction',
  'subscriptions',
  'install',
  'files-quota',
  'temporal-dev',
].map((name) => `test/${name}.test.ts`);
const all = readdirSync('test', { recursive: true })
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => `test/${f}`)
  .sort();

module.exports = {
  'node-option': ['import=tsx/esm'],
  extension: ['ts'],
  require: ['test/support/hooks.ts'],
  spec: [...SLOWEST.filter((f) => all.includes(f)), ...all.filter((f) => !SLOWEST.includes(f))],
  timeout: 60000,
  exit: true,
  parallel: jobs > 1,
  jobs,
};
