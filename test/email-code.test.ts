import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Browser, startTrustingApi } from './support/browser.js';
import { startSmtpServer, type SmtpServer } from './support/smtp.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { createUser } from '../activities/accounts/users.js';
import { sendMail } from '../activities/mail/mailer.js';
import { keepConfig } from './support/keepConfig.js';
import { waitFor } from './support/wait.js';

let n = 0;
const email = () => `coder-${process.pid}-${++n}-${randomUUID().slice(0, 6)}@example.test`;
const codeIn = (text: string) => /\b(\d{8})\b/.exec(text)?.[1];

describe('sign-in by e-mailed code (real SMTP to a loopback server)', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startTrustingApi>>;
  let smtp: SmtpServer;
  const saved = keepConfig();
  before(async () => {
    smtp = await startSmtpServer();
    config.smtpUrl = smtp.url;
    config.mailFrom = 'Gateway <gateway@example.test>';
    api = await startTrustingApi();
  });
  after(async () => {
    await api.close();
    await smtp.close();
  });
  afterEach(() => {
    config.signupPolicy = saved.signupPolicy;
    config.emailCodeTtlSeconds = saved.emailCodeTtlSeconds;
    config.emailCodeAttempts = saved.emailCodeAttempts;
  });

  async function existingUser() {
    const address = email();
    const user = await createUser({ email: address, name: 'Coder', password: null });
    return { address, user };
  }

  async function requestCode(b: Browser, address: string, body: Record<string, unknown> = {}) {
    const r = await b.post('/api/auth/email-code', { email: address, ...body });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.deepEqual(r.body, { ok: true, expires_in_seconds: config.emailCodeTtlSeconds });
    const mail = await smtp.next(address);
    const code = codeIn(mail.text);
    assert.ok(code, mail.text);
    return { code, mail };
  }

  it('mails a code over SMTP; the code signs the user in once and is stored only as an argon2id hash', async () => {
    const { address, user } = await existingUser();
    const b = new Browser(api.base);
    const { code, mail } = await requestCode(b, address);
    assert.equal(mail.from, 'gateway@example.test');
    assert.deepEqual(mail.to, [address]);
    assert.match(mail.subject, new RegExp(code));
    assert.match(mail.raw, /^From: Gateway <gateway@example\.test>/m);
    const rows = (await db().pool.query('SELECT code_hash FROM email_codes WHERE email = $1', [address])).rows;
    assert.equal(rows.length, 1);
    assert.match(rows[0].code_hash, /^\$argon2id\$/);
    assert.ok(!rows[0].code_hash.includes(code));

    const ok = await b.post('/api/auth/email-code/verify', {
      email: address,
      code: `${code.slice(0, 4)} ${code.slice(4)}`,
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.user.sessionId, user.id);
    assert.equal(ok.body.created, false);
    assert.match(b.setCookie!, /HttpOnly/);
    assert.equal((await b.get('/api/auth/session')).body.session.method, 'email_code');
    // single use
    const again = await new Browser(api.base).post('/api/auth/email-code/verify', { email: address, code });
    assert.equal(again.status, 401);
    assert.equal(again.body.code, 'UNAUTHORIZED');
    assert.equal(again.body.details.reason, 'invalid_code');
  });

  it('stops a code after its attempts, even for the right code afterwards', async () => {
    config.emailCodeAttempts = 3;
    const { address } = await existingUser();
    const b = new Browser(api.base);
    const { code } = await requestCode(b, address);
    const wrong = code === '00000000' ? '11111111' : '00000000';
    const left = [];
    for (let i = 0; i < 3; i++) {
      const r = await b.post('/api/auth/email-code/verify', { email: address, code: wrong });
      assert.equal(r.status, 401);
      left.push(r.body.details.attempts_left);
    }
    assert.deepEqual(left, [2, 1, 0]);
    const late = await b.post('/api/auth/email-code/verify', { email: address, code });
    assert.equal(late.status, 401);
    assert.equal(b.cookie, undefined);
  });

  it('counts attempts exactly under parallel guesses', async () => {
    config.emailCodeAttempts = 4;
    const { address } = await existingUser();
    const { code } = await requestCode(new Browser(api.base), address);
    const guesses = Array.from({ length: 20 }, (_, i) => String((Number(code) + i + 1) % 1e8).padStart(8, '0'));
    await Promise.all(
      guesses.map((g) => new Browser(api.base).post('/api/auth/email-code/verify', { email: address, code: g })),
    );
    const row = (await db().pool.query('SELECT attempts FROM email_codes WHERE email = $1', [address])).rows[0];
    assert.equal(row.attempts, 4);
  });

  it('expires a code after its lifetime', async () => {
    config.emailCodeTtlSeconds = 1;
    const { address } = await existingUser();
    const b = new Browser(api.base);
    const { code } = await requestCode(b, address);
    await new Promise((r) => setTimeout(r, 1300)); // a fixed time on purpose: past the code's 1 s lifetime
    assert.equal((await b.post('/api/auth/email-code/verify', { email: address, code })).status, 401);
  });

  it('retires the older code when a new one is sent', async () => {
    const { address } = await existingUser();
    const b = new Browser(api.base);
    const first = await requestCode(b, address);
    const second = await requestCode(b, address);
    if (first.code !== second.code)
      assert.equal((await b.post('/api/auth/email-code/verify', { email: address, code: first.code })).status, 401);
    assert.equal((await b.post('/api/auth/email-code/verify', { email: address, code: second.code })).status, 200);
  });

  it('signs a new address up when sign-up is open, with the name given', async () => {
    const address = email();
    const b = new Browser(api.base);
    const { code } = await requestCode(b, address, { name: 'New Person' });
    const r = await b.post('/api/auth/email-code/verify', { email: address, code });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.created, true);
    assert.equal(r.body.user.displayName, 'New Person');
    assert.equal((await b.get('/api/check-balance')).status, 200);
  });

  it('answers the same for an unknown address when sign-up is closed, and sends nothing', async () => {
    config.signupPolicy = 'closed';
    const known = await existingUser();
    const address = email();
    const b = new Browser(api.base);
    const r = await b.post('/api/auth/email-code', { email: address });
    assert.equal(r.status, 202);
    assert.deepEqual(r.body, { ok: true, expires_in_seconds: config.emailCodeTtlSeconds });
    // a known address still gets its code (sent after the unknown one was asked for)
    await requestCode(b, known.address);
    await new Promise((res) => setTimeout(res, 200)); // a fixed time on purpose: no mail may come within it
    assert.equal(smtp.mails.filter((m) => m.to.includes(address)).length, 0);
    assert.equal((await db().pool.query('SELECT 1 FROM email_codes WHERE email = $1', [address])).rowCount, 0);
    const guess = await b.post('/api/auth/email-code/verify', { email: address, code: '12345678' });
    assert.equal(guess.status, 401);
  });

  it('limits code requests per address (429) so an inbox cannot be flooded', async () => {
    const saveLimit = config.authAttemptsPerEmail;
    config.authAttemptsPerEmail = 2;
    try {
      const { address } = await existingUser();
      await requestCode(new Browser(api.base), address);
      await requestCode(new Browser(api.base), address);
      const r = await new Browser(api.base).post('/api/auth/email-code', { email: address });
      assert.equal(r.status, 429);
      assert.equal(r.body.code, 'RATE_LIMITED');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
    } finally {
      config.authAttemptsPerEmail = saveLimit;
    }
  });

  it('still answers 202 when the mail server is down, and the operator reads why in the log', async () => {
    const { address } = await existingUser();
    const closed = await startSmtpServer();
    await closed.close(); // a port nothing listens on any more
    config.smtpUrl = closed.url;
    const errors: string[] = [];
    const error = console.error;
    console.error = (...args: unknown[]) => errors.push(args.join(' '));
    try {
      const r = await new Browser(api.base).post('/api/auth/email-code', { email: address });
      assert.equal(r.status, 202);
      await waitFor(
        () => errors.some((e) => e.includes('could not send a sign-in code')),
        10_000,
        'the logged failure',
      );
    } finally {
      console.error = error;
      config.smtpUrl = smtp.url;
    }
    assert.ok(
      errors.some((e) => /\[auth\] req_\w+ could not send a sign-in code/.test(e)),
      errors.join('\n'),
    );
  });

  it('without SMTP_URL writes the message (recipient, subject, code) to the log', async () => {
    config.smtpUrl = undefined;
    const lines: string[] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => lines.push(args.join(' '));
    try {
      await sendMail({ to: 'someone@example.test', subject: 'Your sign-in code: 12345678', text: 'code 12345678' });
    } finally {
      console.log = log;
      config.smtpUrl = smtp.url;
    }
    const out = lines.join('\n');
    assert.match(out, /To: someone@example\.test/);
    assert.match(out, /Subject: Your sign-in code: 12345678/);
    assert.match(out, /\| code 12345678/);
  });
});
