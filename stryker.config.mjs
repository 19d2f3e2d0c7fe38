// Mutation testing (`npm run test:mutation`): StrykerJS changes the money and streaming code one small
// edit at a time and reruns the tests that cover each change; a change no test notices (a surviving
// mutant) is a gap in the tests. Slow (minutes), so not part of `npm test`. Reports go to reports/.
import { existsSync } from 'node:fs';
import './test/support/stryker-mocha12.mjs';

const mocha12 = new URL('./test/support/stryker-mocha12.mjs', import.meta.url).href;

// The tests run in a copy of the project (.stryker-tmp/sandbox-*), where the built-in model's file is
// not on the local provider's search path (.data/models, ../shared/models): point it at the real one.
const modelDir = ['./.data/models/', '../shared/models/']
  .map((dir) => new URL(dir, import.meta.url).pathname)
  .find((dir) => existsSync(dir));
if (modelDir && !process.env.LOCAL_MODELS_DIR) process.env.LOCAL_MODELS_DIR = modelDir;
// Nor is the project's Temporal CLI (.venv is not copied): the suites that start a Temporal dev
// server (subscriptions, invitations) would otherwise look for one, or install one, per sandbox.
const temporalCli = new URL('./.venv/bin/temporal', import.meta.url).pathname;
if (existsSync(temporalCli) && !process.env.TEMPORAL_CLI) process.env.TEMPORAL_CLI = temporalCli;

const specFiles = [
  'test/ledger.test.ts',
  'test/leases.test.ts',
  'test/lease-upkeep.test.ts',
  'test/subscriptions.test.ts',
  'test/team-billing.test.ts',
  'test/invitations.test.ts',
  'test/metered-call.test.ts',
  'test/undelivered.test.ts',
  'test/redaction.test.ts',
  'test/unit/sse.test.ts',
  'test/chat.test.ts',
  'test/unit/client-abort.test.ts',
  'test/passthrough.test.ts',
  'test/chat-providers.test.ts',
  'test/messages.test.ts',
];

export default {
  // Every module of the ledger (the ledger, its holds, leases and refunds, the subscription
  // allowance, team budgets, transfers between accounts), the metered call and the modules it was
  // split into, PII redaction's masking, and the SSE parser.
  mutate: [
    'activities/ledger/**/*.ts',
    'activities/metering/meteredCall.ts',
    'activities/metering/funds.ts',
    'activities/metering/upstreamFailures.ts',
    'activities/redaction/mask.ts',
    'activities/providers/sse.ts',
  ],
  testRunner: 'mocha',
  // The tests are TypeScript run by tsx (what .mocharc.json's node-option does for `npm test`).
  testRunnerNodeArgs: ['--import', 'tsx/esm', '--import', mocha12],
  checkerNodeArgs: ['--import', mocha12],
  mochaOptions: {
    'no-config': true,
    extension: ['ts'],
    // setup.ts first: its root hooks make the database every other file uses. Then the files that
    // exercise the mutated code: the ledger and leases directly, the allowance through
    // subscriptions, team budgets through team billing, transfers through credit invitations, the
    // metered call (and its refunds of undelivered answers) directly and through the API's text
    // surfaces (streaming included), masking through redaction, the SSE parser directly. Files
    // another branch may not have yet are skipped.
    // SWITCHYARD_MUTATION_TESTS (a comma list of test files) runs those instead: one file's mutants
    // against its own area's tests, in minutes rather than an hour.
    spec: [
      'test/support/setup.ts',
      ...(process.env.SWITCHYARD_MUTATION_TESTS?.split(',').filter(Boolean) ?? specFiles),
    ].filter((file) => existsSync(new URL(file, import.meta.url))),
    // Not the tests whose work happens in processes they start: Stryker switches a mutant on only in
    // its own test process, so those could not kill one, and they are the slowest.
    grep: '^(?!.*(three processes with their own leases|reservations from several processes))',
  },
  // Each mutant runs only the tests that reached its code in the first, instrumented run.
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 10000,
  // the first run of every test, instrumented, takes several minutes on two busy cores
  dryRunTimeoutMinutes: 30,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  // The sandbox copy of the project needs prisma/generated (git-ignored), but not these.
  ignorePatterns: ['.data', 'dist', 'reports', '.venv'],
  tempDirName: '.stryker-tmp',
};
