import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { config } from '../activities/config.js';
import { assertBooksBalance } from './support/books.js';
import { startApi } from './support/api.js';

const run = promisify(execFile);
const ops = fileURLToPath(new URL('../bin/ops.ts', import.meta.url));

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const r = await run(process.execPath, ['--import', 'tsx/esm', ops, ...args], {
      env: { ...process.env, DATABASE_URL: config.databaseUrl },
    });
    return { code: 0, out: r.stdout, err: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, out: x.stdout, err: x.stderr };
  }
}

describe('operator CLI (npm run ops)', function () {
  this.timeout(60_000);
  const name = `ops-${process.pid}`;

  it('creates an account, credits and debits it with reasons, and shows the ledger', async () => {
    let r = await cli('accounts', 'create', name, '--balance', '2.50');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /USD {2}balance 2\.5 /);
    r = await cli('credit', name, '1.25', '--reason', 'support refund #42');
    assert.match(r.out, /balance now 3\.75/);
    r = await cli('debit', name, '0.75', '--reason', 'manual correction');
    assert.match(r.out, /balance now 3\b/);
    r = await cli('debit', name, '100', '--reason', 'too much');
    assert.equal(r.code, 1);
    assert.match(r.err, /refused/);
    r = await cli('credit', name, '1');
    assert.equal(r.code, 1);
    assert.match(r.err, /--reason is required/);
    r = await cli('accounts', 'show', name);
    assert.match(r.out, /support refund #42/);
    assert.match(r.out, /manual correction/);
    await assertBooksBalance();
  });

  it('creates keys with restrictions, lists and revokes them', async () => {
    let r = await cli('keys', 'create', name, '--name', 'ci', '--rpd', '100', '--usd-per-day', '2', '--deny', 'groq');
    assert.equal(r.code, 0, r.err);
    const key = /(sk-nanogpt-[0-9a-f-]{36})/.exec(r.out)![1];
    r = await cli('keys', 'list', name);
    const prefix = key.slice(0, 'sk-nanogpt-'.length + 8);
    assert.match(r.out, new RegExp(`${prefix}….*active.*rpd 100, usd/day 2`));
    r = await cli('keys', 'revoke', prefix);
    assert.match(r.out, /1 key\(s\) revoked/);
    assert.match((await cli('keys', 'list', name)).out, /revoked/);
  });

  it('explains its mistakes instead of crashing', async () => {
    assert.match((await cli('accounts', 'show', 'nobody-here')).err, /no account "nobody-here"/);
    assert.match((await cli('frobnicate')).err, /unknown command/);
    assert.match((await cli('credit', name, '1.0000000001', '--reason', 'x')).err, /more than 9 decimals/);
  });

  it('creates users who can sign in, lists them, changes a password and ends their sessions', async () => {
    const email = `ops-user-${process.pid}@example.test`;
    let r = await cli('users', 'create', email, '--name', 'Op User', '--password', 'ops password 1', '--balance', '2');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, new RegExp(`user \\d+ \\([0-9a-f-]{36}\\) ${email} "Op User" created`));
    assert.match(r.out, /USD {2}balance 2 /);
    assert.match((await cli('users', 'create', email)).err, /already exists/);
    assert.match((await cli('users', 'create', 'not-an-address')).err, /e-mail address/);
    assert.match((await cli('users', 'create', `short-${email}`, '--password', 'short')).err, /--password must be/);
    assert.match((await cli('users', 'list')).out, new RegExp(`${email} +Op User`));
    // the personal account is named by the address
    assert.match((await cli('accounts', 'show', email)).out, /balance 2 /);

    const api = await startApi();
    try {
      const login = (password: string) =>
        fetch(`${api.base}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email, password }),
        });
      const first = await login('ops password 1');
      assert.equal(first.status, 200);
      const cookie = first.headers.getSetCookie()[0]!.split(';')[0]!;
      const session = () => fetch(`${api.base}/api/auth/session`, { headers: { cookie } });
      assert.equal((await session()).status, 200);
      r = await cli('users', 'password', email, '--password', 'ops password 2');
      assert.match(r.out, /password of .* changed; 1 open session\(s\) ended/);
      assert.equal((await session()).status, 401);
      assert.equal((await login('ops password 1')).status, 401);
      const second = await login('ops password 2');
      assert.equal(second.status, 200);
      assert.match((await cli('users', 'sign-out', email)).out, /1 session\(s\) of .* ended/);
    } finally {
      await api.close();
    }
  });
});
