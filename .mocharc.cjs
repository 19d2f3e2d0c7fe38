// `npm test`: every test file (the unit tier in test/unit/ included), in parallel worker processes,
// each with its own database and Temporal server (test/support/hooks.ts). SWITCHYARD_TEST_JOBS sets
// the number of workers (default 4: most of a file's time is spent waiting on servers and timers, not
// on the CPU); 1 runs the files one after another in this process. `npm run test:unit` has its own
// config (.mocharc.unit.cjs); `npm run test:one -- <files>` runs chosen files serially.
const jobs = Math.max(1, Number(process.env.SWITCHYARD_TEST_JOBS) || 4);

module.exports = {
  'node-option': ['import=tsx/esm'],
  extension: ['ts'],
  require: ['test/support/hooks.ts'],
  spec: ['test/**/*.test.ts'],
  timeout: 60000,
  exit: true,
  parallel: jobs > 1,
  jobs,
};
