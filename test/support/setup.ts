// Root hooks as a spec file, for runners that load spec files only (mutation testing lists it first):
// the process's own migrated database for the whole run, as test/support/hooks.ts gives `npm test`.
import { closeTestDatabase, openTestDatabase } from './lifecycle.js';

before(async function (this: Mocha.Context) {
  this.timeout(120_000);
  await openTestDatabase();
});

after(async function (this: Mocha.Context) {
  this.timeout(60_000);
  await closeTestDatabase();
});
