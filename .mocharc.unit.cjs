// `npm run test:unit`: the tests that need no database, no Temporal and no network (test/unit/), in
// one process. test/support/unitGuard.ts makes any connection attempt fail the test that made it.
module.exports = {
  'node-option': ['import=tsx/esm'],
  extension: ['ts'],
  require: ['test/support/unitGuard.ts'],
  spec: ['test/unit/**/*.test.ts'],
  timeout: 10000,
  exit: true,
};
