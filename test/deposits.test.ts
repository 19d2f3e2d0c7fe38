// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Crypto deposits (POST /api/transaction/create/{ticker}, GET /api/transaction/limits/{ticker}) end to
// end: the real API, the real Temporal dev server and worker, and a loopback BTCPay Server speaking
// the Greenfield API (test/support/upstreams/btcpay.ts) that moves its invoices as BTCPay does and
// POSTs signed webhooks to the gateway. Each deposit must be credited exactly once, by what BTCPay
// settled, whatever order, number and timing its webhooks come in; the books balance after each test.
import assert from 'node:assert/strict';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { balances } from '../activities/ledger/ledger.js';
import { parseAmount } from '../activities/core/money.js';
import { completeDeposit } from '../activities/payments/depositRun.js';
import { newAccount, startApi } from './support/api.js';
import { assertBooksBalance } from './support/books.js';
import { keepConfig } from './support/keepConfig.js';
import { onOwnWorkers } from './support/ownWorkers.js';
import { useTemporal } from './support/temporal.js';
import { startBtcpayUpstream, type BtcpayUpstream } from './support/upstreams/btcpay.js';
import { until } from './support/wait.js';

const usd = (text: string) => parseAmount(text, 'USD');

/** coin × USD-per-coin, in nano-USD rounded down: worked out here, not with the gateway's code. */
function valueNano(coin: string, rate: string): bigint {
  const [cw, cf = ''] = coin.split('.');
  const [rw, rf = ''] = rate.split('.');
  return (BigInt(cw! + cf) * BigInt(rw! + rf) * 10n ** 9n) / 10n ** BigInt(cf.length + rf.length);
}

describe('crypto deposits through BTCPay Server (Greenfield), one workflow each', function () {
  this.timeout(120_000);
  keepConfig();
  let api: Awaited<ReturnType<typeof startApi>>;
  let btcpay: BtcpayUpstream;
  let webhookUrl: string;

  before(async () => {
    await useTemporal();
    btcpay = await startBtcpayUpstream();
    config.btcpay = {
      url: btcpay.url,
      apiKey: btcpay.apiKey,
      storeId: btcpay.storeId,
      webhookSecret: btcpay.webhookSecret,
    };
    api = await startApi();
    webhookUrl = `${api.base}/api/transaction/webhook/btcpay`;
  });
  beforeEach(() => {
    // webhooks drive the deposits: polling only when a test says so
    config.depositPollSeconds = 3600;
    btcpay.webhookTo(webhookUrl);
    btcpay.holdWebhooks(false);
    btcpay.enable('BTC-CHAIN', 'BTC-LN', 'LTC-CHAIN');
    btcpay.timing({ expirationSeconds: 900, monitoringSeconds: 3600 });
    btcpay.failNext(0);
  });
  after(async () => {
    await api?.close();
    await btcpay?.close();
  });
  afterEach(() => assertBooksBalance());

  const call = async (method: string, path: string, key?: string, body?: unknown) => {
    const res = await fetch(`${api.base}${path}`, {
      method,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  };
  const deposit = async (key: string, ticker: string, amount: unknown) => {
    const r = await call('POST', `/api/transaction/create/${ticker}`, key, { amount });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { txId: string; address: string; amount: number; status: string; paymentLink: string };
  };
  const row = async (txId: string) =>
    (await db().pool.query('SELECT * FROM crypto_deposits WHERE id = $1', [txId])).rows[0];
  const statusBecomes = (txId: string, status: string, ms = 30_000) =>
    until(
      () => row(txId),
      (r) => r?.status === status,
      ms,
      `deposit ${txId} to be ${status}`,
    );
  const finished = async (txId: string) => (await useTemporal()).client.workflow.getHandle(txId).result();
  const creditsOf = async (invoiceId: string) =>
    (
      await db().pool.query(`SELECT amount FROM ledger_entries WHERE idempotency_key = $1`, [`deposit:${invoiceId}`])
    ).rows.map((r) => BigInt(r.amount));
  /** how many times the deposit's workflow has read its invoice from BTCPay */
  const looks = async (txId: string) =>
    (await (await useTemporal()).client.workflow.getHandle(txId).fetchHistory()).events?.filter(
      (e) => e.activityTaskCompletedEventAttributes,
    ).length ?? 0;
  const usdBalance = async (accountId: string) => (await balances(accountId))!.USD.amount;

  it('limits: the spec USD bounds for each offered ticker; unknown and unoffered tickers are 400', async () => {
    const { key } = await newAccount('0');
    const btc = await call('GET', '/api/transaction/limits/btc', key);
    assert.equal(btc.status, 200, JSON.stringify(btc.body));
    assert.equal(btc.body.minimum, 1);
    assert.equal(btc.body.maximum, 2000);
    assert.equal(btc.body.fiatEquivalentMinimum, 1);
    assert.equal(btc.body.fiatEquivalentMaximum, 2000);
    assert.ok(Math.abs(btc.body.timestamp - Date.now()) < 60_000);
    const ln = await call('GET', '/api/transaction/limits/btc-ln', key);
    assert.deepEqual([ln.body.minimum, ln.body.maximum], [0.1, 2000]);

    // a spec ticker this store has no wallet for
    const xmr = await call('GET', '/api/transaction/limits/xmr', key);
    assert.equal(xmr.status, 400);
    assert.equal(xmr.body.code, 'unsupported_ticker');
    assert.match(xmr.body.message, /does not accept xmr.*It accepts: btc, btc-ln, ltc/);
    // not a ticker at all
    const foo = await call('GET', '/api/transaction/limits/foo', key);
    assert.equal(foo.status, 400);
    assert.match(foo.body.message, /Unsupported ticker 'foo'/);
    assert.equal((await call('GET', '/api/transaction/limits/btc')).status, 401);
  });

  it('a deposit end to end: a USD invoice, its address and wallet URI, credited once when settled', async () => {
    const { key, accountId } = await newAccount('0');
    const invoicesBefore = btcpay.invoices.size;
    const d = await deposit(key, 'btc', 25.5);
    assert.match(d.txId, /^tx_[0-9a-f]{24}$/);
    assert.equal(d.status, 'New');
    const inv = btcpay.invoiceOf(d.txId)!;
    assert.equal(btcpay.invoices.size, invoicesBefore + 1);
    // the invoice: USD, this amount, only the ticker's payment method, our txId as its orderId
    const made = btcpay.requests.find((r) => r.method === 'POST' && r.body?.metadata?.orderId === d.txId)!;
    assert.equal(made.body.currency, 'USD');
    assert.equal(made.body.amount, '25.5');
    assert.deepEqual(made.body.checkout.paymentMethods, ['BTC-CHAIN']);
    assert.equal(made.auth, `token ${btcpay.apiKey}`);
    // the deposit shows what the invoice's payment method says
    assert.equal(d.address, inv.destination);
    assert.equal(d.amount, Number(inv.coinAmount));
    assert.equal(d.paymentLink, `bitcoin:${inv.destination}?amount=${inv.coinAmount}`);
    assert.equal(new Date((d as any).expiresAt).getTime(), inv.expirationTime * 1000);
    // the workflow: id = txId, the owner searchable
    const desc = await (await useTemporal()).client.workflow.getHandle(d.txId).describe();
    assert.equal(desc.type, 'cryptoDeposit');
    assert.deepEqual(desc.searchAttributes.SwitchyardAccountId, [accountId]);

    const payment = await btcpay.pay(inv.id);
    await statusBecomes(d.txId, 'Processing');
    const shown = await call('GET', `/api/transaction/status/${d.txId}`, key);
    assert.equal(shown.status, 200);
    assert.deepEqual({ ...shown.body, status: 'New', credited: undefined }, { ...d, credited: undefined });
    assert.equal(shown.body.status, 'Processing');
    assert.equal(shown.body.credited, null);
    // another account's deposit is not found
    assert.equal((await call('GET', `/api/transaction/status/${d.txId}`, (await newAccount('0')).key)).status, 404);
    assert.equal(await usdBalance(accountId), 0n, 'nothing credited before BTCPay settles');
    await btcpay.confirm(inv.id, payment);
    assert.equal(await finished(d.txId), 'Completed');
    assert.equal(await usdBalance(accountId), usd('25.5'));
    assert.deepEqual(await creditsOf(inv.id), [usd('25.5')]);
    const r = await row(d.txId);
    assert.equal(r.credited_usd, usd('25.5').toString());
    assert.equal(r.invoice_status, 'Settled');
    const done = await call('GET', `/api/transaction/status/${d.txId}`, key);
    assert.equal(done.body.status, 'Completed');
    assert.equal(done.body.credited, 25.5);

    // every webhook again, as BTCPay's redelivery sends them: nothing more
    for (const dl of btcpay.deliveries.filter((x) => x.invoiceId === inv.id)) {
      assert.equal(await btcpay.deliver(dl), 200);
    }
    assert.equal(await usdBalance(accountId), usd('25.5'));
    assert.deepEqual(await creditsOf(inv.id), [usd('25.5')]);
  });

  it('refuses what the spec refuses, before anything is made or stored', async () => {
    const { key, accountId } = await newAccount('0');
    const invoicesBefore = btcpay.invoices.size;
    const refused = async (ticker: string, body: unknown, code: string) => {
      const r = await call('POST', `/api/transaction/create/${ticker}`, key, body);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.code, code, JSON.stringify(r.body));
      assert.equal(typeof r.body.message, 'string');
      return r.body;
    };
    await refused('btc', {}, 'missing_required_parameter');
    await refused('btc', { amount: '10' }, 'invalid_parameter_value');
    await refused('btc', { amount: -5 }, 'invalid_amount');
    await refused('btc', { amount: 10.001 }, 'invalid_amount');
    assert.match((await refused('btc', { amount: 0.5 }, 'amount_below_minimum')).message, /1-2000 USD/);
    await refused('btc', { amount: 2000.01 }, 'amount_above_maximum');
    await refused('egld', { amount: 5 }, 'unsupported_ticker');
    await refused('doge', { amount: 5 }, 'unsupported_ticker');
    // btc-ln goes down to 10 cents
    await deposit(key, 'btc-ln', 0.1);
    const noKey = await call('POST', '/api/transaction/create/btc', undefined, { amount: 5 });
    assert.equal(noKey.status, 401);
    assert.equal(btcpay.invoices.size, invoicesBefore + 1);
    const { rows } = await db().pool.query('SELECT ticker FROM crypto_deposits WHERE account_id = $1', [accountId]);
    assert.deepEqual(
      rows.map((r) => r.ticker),
      ['btc-ln'],
    );
  });

  it('BTCPay down: 500 and nothing stored; down mid-deposit: the workflow retries until it answers', async () => {
    const { key, accountId } = await newAccount('0');
    btcpay.failNext(1, 502, /^POST .*\/invoices$/);
    const r = await call('POST', '/api/transaction/create/ltc', key, { amount: 5 });
    assert.equal(r.status, 500, JSON.stringify(r.body));
    assert.equal(r.body.code, 'provider_unavailable');
    assert.doesNotMatch(JSON.stringify(r.body), /nginx|127\.0\.0\.1|token/);
    assert.equal(
      (await db().pool.query('SELECT count(*)::int AS n FROM crypto_deposits WHERE account_id = $1', [accountId]))
        .rows[0].n,
      0,
    );

    const d = await deposit(key, 'ltc', 5);
    const inv = btcpay.invoiceOf(d.txId)!;
    btcpay.failNext(2, 503, new RegExp(`/invoices/${inv.id}`));
    await btcpay.pay(inv.id);
    await btcpay.confirm(inv.id);
    assert.equal(await finished(d.txId), 'Completed');
    assert.deepEqual(await creditsOf(inv.id), [usd('5')]);
  });

  it('two webhooks at once (and a burst of them): credited once', async () => {
    const { key, accountId } = await newAccount('0');
    const d = await deposit(key, 'btc', 40);
    const inv = btcpay.invoiceOf(d.txId)!;
    btcpay.holdWebhooks(true);
    await btcpay.pay(inv.id);
    await btcpay.confirm(inv.id);
    const settled = btcpay.deliveries.find((x) => x.invoiceId === inv.id && x.type === 'InvoiceSettled')!;
    const paymentSettled = btcpay.deliveries.find((x) => x.invoiceId === inv.id && x.type === 'InvoicePaymentSettled')!;
    // the same delivery twice, at the same moment, beside another
    const answers = await Promise.all([
      btcpay.deliver(settled),
      btcpay.deliver(settled),
      btcpay.deliver(paymentSettled),
    ]);
    assert.deepEqual(answers, [200, 200, 200]);
    assert.equal(await finished(d.txId), 'Completed');
    // and a burst of redeliveries after it closed
    await Promise.all(Array.from({ length: 10 }, () => btcpay.deliver(settled)));
    assert.deepEqual(await creditsOf(inv.id), [usd('40')]);
    assert.equal(await usdBalance(accountId), usd('40'));
  });

  it('the credit raced: attempts of the credit step at once (a retry beside a slow first try) post it once', async () => {
    const { key, accountId } = await newAccount('0');
    btcpay.holdWebhooks(true);
    const d = await deposit(key, 'btc', 33);
    const inv = btcpay.invoiceOf(d.txId)!;
    await btcpay.pay(inv.id);
    await btcpay.confirm(inv.id);
    const credit = usd('33').toString();
    const results = await Promise.all(Array.from({ length: 8 }, () => completeDeposit(d.txId, credit)));
    assert.deepEqual(results, Array(8).fill('Completed'));
    assert.deepEqual(await creditsOf(inv.id), [usd('33')]);
    // then the workflow hears of it and runs its own credit step: still once
    const settled = btcpay.deliveries.find((x) => x.invoiceId === inv.id && x.type === 'InvoiceSettled')!;
    assert.equal(await btcpay.deliver(settled), 200);
    assert.equal(await finished(d.txId), 'Completed');
    assert.deepEqual(await creditsOf(inv.id), [usd('33')]);
    assert.equal(await usdBalance(accountId), usd('33'));
  });

  it('paid over the invoice: the invoice amount plus the excess at its rate', async () => {
    const { key, accountId } = await newAccount('0');
    const d = await deposit(key, 'ltc', 10);
    const inv = btcpay.invoiceOf(d.txId)!;
    await btcpay.pay(inv.id, '0.06'); // the invoice asks 0.11428572 LTC (10 USD at 87.5, rounded up)
    await btcpay.pay(inv.id, '0.06');
    assert.equal(inv.additionalStatus, 'PaidOver');
    await btcpay.confirm(inv.id);
    assert.equal(await finished(d.txId), 'Completed');
    const excess = valueNano('0.00571428', inv.rate); // 0.12 - 0.11428572 LTC
    assert.equal(inv.coinAmount, '0.11428572');
    assert.deepEqual(await creditsOf(inv.id), [usd('10') + excess]);
    assert.equal(await usdBalance(accountId), usd('10') + excess);
  });

  it('webhooks out of order: settled first, created last; credited once, by what BTCPay says', async () => {
    const { key, accountId } = await newAccount('0');
    btcpay.holdWebhooks(true);
    const d = await deposit(key, 'btc', 12);
    const inv = btcpay.invoiceOf(d.txId)!;
    await btcpay.pay(inv.id);
    const early = btcpay.deliveries.filter((x) => x.invoiceId === inv.id);
    // a "payment received" that arrives while the payment is still confirming moves it to Processing only
    const received = early.find((x) => x.type === 'InvoiceReceivedPayment')!;
    assert.equal(await btcpay.deliver(received), 200);
    await statusBecomes(d.txId, 'Processing');
    await btcpay.confirm(inv.id);
    const all = btcpay.deliveries.filter((x) => x.invoiceId === inv.id && x.answered === undefined);
    assert.deepEqual(
      all.map((x) => x.type),
      ['InvoiceCreated', 'InvoiceProcessing', 'InvoicePaymentSettled', 'InvoiceSettled'],
    );
    for (const dl of all.reverse()) assert.equal(await btcpay.deliver(dl), 200);
    assert.equal(await finished(d.txId), 'Completed');
    assert.deepEqual(await creditsOf(inv.id), [usd('12')]);
    assert.equal(await usdBalance(accountId), usd('12'));
  });

  it('a webhook whose signature is wrong or missing is refused and changes nothing', async () => {
    const { key, accountId } = await newAccount('0');
    btcpay.holdWebhooks(true);
    const d = await deposit(key, 'btc', 8);
    const inv = btcpay.invoiceOf(d.txId)!;
    // The workflow's first look at the invoice is its own (no webhook needed): paid before it, the
    // deposit would complete on that look, and the refused webhooks would prove nothing.
    await until(
      () => looks(d.txId),
      (n) => n >= 1,
      30_000,
      'the first look at the invoice',
    );
    await btcpay.pay(inv.id);
    await btcpay.confirm(inv.id);
    const settled = btcpay.deliveries.find((x) => x.invoiceId === inv.id && x.type === 'InvoiceSettled')!;
    assert.equal(await btcpay.deliver(settled, { secret: 'not-the-secret' }), 401);
    const handle = (await useTemporal()).client.workflow.getHandle(d.txId);
    const post = (headers: Record<string, string>, body: string) =>
      fetch(webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const unsigned = await post({}, settled.body);
    assert.equal(unsigned.status, 401);
    assert.equal(((await unsigned.json()) as any).code, 'invalid_signature');
    // the signature of the genuine body on another body
    const { createHmac } = await import('node:crypto');
    const sig = `sha256=${createHmac('sha256', btcpay.webhookSecret).update(settled.body).digest('hex')}`;
    assert.equal(
      (await post({ 'btcpay-sig': sig }, settled.body.replace('InvoiceSettled', 'InvoiceSettled '))).status,
      401,
    );
    // none of them reached the workflow
    const history = await handle.fetchHistory();
    assert.ok(!history.events?.some((e) => e.workflowExecutionSignaledEventAttributes), 'no signal was recorded');
    assert.equal((await row(d.txId)).status, 'New');
    assert.equal(await usdBalance(accountId), 0n);
    // the genuine one goes through
    assert.equal(await btcpay.deliver(settled), 200);
    assert.equal(await finished(d.txId), 'Completed');
    assert.equal(await usdBalance(accountId), usd('8'));
  });

  it('no webhooks at all: polling finds the settled invoice', async () => {
    config.depositPollSeconds = 1;
    btcpay.webhookTo('http://127.0.0.1:9/unreachable');
    const { key, accountId } = await newAccount('0');
    const d = await deposit(key, 'btc', 3);
    const inv = btcpay.invoiceOf(d.txId)!;
    // the workflow has looked once and found it unpaid: only a later look can find it paid
    await until(
      () => looks(d.txId),
      (n) => n >= 1,
      30_000,
      'the first look at the invoice',
    );
    await btcpay.pay(inv.id);
    await btcpay.confirm(inv.id);
    assert.equal(await finished(d.txId), 'Completed');
    assert.equal(await usdBalance(accountId), usd('3'));
  });

  it('paid partially before it expired: the settled part is credited when BTCPay stops watching', async () => {
    btcpay.timing({ expirationSeconds: 2, monitoringSeconds: 3 });
    const { key, accountId } = await newAccount('0');
    const d = await deposit(key, 'btc', 10);
    const inv = btcpay.invoiceOf(d.txId)!;
    const part = '0.0001';
    await btcpay.pay(inv.id, part);
    await statusBecomes(d.txId, 'Pending');
    await btcpay.confirm(inv.id);
    assert.equal(await finished(d.txId), 'Completed');
    assert.equal(inv.status, 'Expired');
    assert.equal(inv.additionalStatus, 'PaidPartial');
    const expected = valueNano(part, inv.rate); // 0.0001 BTC at 43210.55 USD = 4.321055 USD
    assert.equal(expected, usd('4.321055'));
    assert.deepEqual(await creditsOf(inv.id), [expected]);
    assert.equal(await usdBalance(accountId), expected);
    assert.equal((await row(d.txId)).invoice_status, 'Expired/PaidPartial');
  });

  it('paid after it expired: credited what BTCPay settled; unpaid: closed Expired; marked invalid: nothing', async () => {
    btcpay.timing({ expirationSeconds: 1, monitoringSeconds: 4 });
    const { key, accountId } = await newAccount('0');
    const late = await deposit(key, 'btc', 20);
    const unpaid = await deposit(key, 'ltc', 2);
    btcpay.timing({ expirationSeconds: 900, monitoringSeconds: 3600 });
    const refused = await deposit(key, 'btc', 7);
    const inv = btcpay.invoiceOf(late.txId)!;
    await statusBecomes(late.txId, 'Expired');
    await btcpay.pay(inv.id);
    await btcpay.confirm(inv.id);
    assert.equal(inv.additionalStatus, 'PaidLate');
    assert.equal(await finished(late.txId), 'Completed');
    // paid the coin amount asked, in full: the invoice's 20 USD, not the rounded-up coins' value
    const expected = usd('20');
    assert.ok(valueNano(inv.coinAmount, inv.rate) > expected);
    assert.deepEqual(await creditsOf(inv.id), [expected]);

    assert.equal(await finished(unpaid.txId), 'Expired');
    assert.deepEqual(await creditsOf(btcpay.invoiceOf(unpaid.txId)!.id), []);

    const bad = btcpay.invoiceOf(refused.txId)!;
    await btcpay.pay(bad.id);
    await btcpay.markInvalid(bad.id);
    assert.equal(await finished(refused.txId), 'Invalid');
    assert.deepEqual(await creditsOf(bad.id), []);
    assert.equal(await usdBalance(accountId), expected);
  });

  it('10 deposit requests per 10 minutes per key, then 429 with Retry-After', async () => {
    // not across a window boundary (the windows are fixed, every 10 minutes)
    const intoWindow = (Date.now() / 1000) % 600;
    if (intoWindow > 590) await new Promise((r) => setTimeout(r, (601 - intoWindow) * 1000));
    const { key } = await newAccount('0');
    const results = [];
    for (let i = 0; i < 10; i++)
      results.push((await call('POST', '/api/transaction/create/btc', key, { amount: 1 + i })).status);
    assert.deepEqual(results, Array(10).fill(200));
    const over = await call('POST', '/api/transaction/create/btc', key, { amount: 1 });
    assert.equal(over.status, 429);
    assert.equal(over.body.code, 'rate_limit_exceeded');
    assert.ok(Number(over.headers.get('retry-after')) > 0);
    // another key is counted apart
    assert.equal(
      (await call('POST', '/api/transaction/create/btc', (await newAccount('0')).key, { amount: 1 })).status,
      200,
    );
  });

  it('a worker SIGKILLed while it reads the invoice from BTCPay: the read is tried again elsewhere, credited once', async () => {
    await onOwnWorkers('deposit-kill-read', async (startWorker) => {
      const env = {
        BTCPAY_URL: btcpay.url,
        BTCPAY_API_KEY: btcpay.apiKey,
        BTCPAY_STORE_ID: btcpay.storeId,
        BTCPAY_WEBHOOK_SECRET: btcpay.webhookSecret,
      };
      const first = await startWorker(env);
      const { key, accountId } = await newAccount('0');
      const d = await deposit(key, 'btc', 9);
      const inv = btcpay.invoiceOf(d.txId)!;
      await until(
        () => looks(d.txId),
        (n) => n >= 1,
        30_000,
        'the first look at the invoice',
      );
      // BTCPay hangs on this invoice; the payment's webhook sends the first worker to read it
      btcpay.stall(new RegExp(`/invoices/${inv.id}`));
      try {
        await btcpay.pay(inv.id);
        await until(
          async () => btcpay.stalled(),
          (n) => n >= 1,
          30_000,
          'the worker to be reading the invoice',
        );
        await first.kill();
        await btcpay.confirm(inv.id);
      } finally {
        btcpay.unstall();
      }
      await startWorker(env);
      assert.equal(await finished(d.txId), 'Completed');
      assert.deepEqual(await creditsOf(inv.id), [usd('9')]);
      assert.equal(await usdBalance(accountId), usd('9'));
    });
  }).timeout(180_000);

  it('a worker SIGKILLed mid-deposit: another finishes it, credited once', async () => {
    await onOwnWorkers('deposit-kill', async (startWorker) => {
      const env = {
        BTCPAY_URL: btcpay.url,
        BTCPAY_API_KEY: btcpay.apiKey,
        BTCPAY_STORE_ID: btcpay.storeId,
        BTCPAY_WEBHOOK_SECRET: btcpay.webhookSecret,
      };
      const first = await startWorker(env);
      const { key, accountId } = await newAccount('0');
      const d = await deposit(key, 'btc', 15);
      const inv = btcpay.invoiceOf(d.txId)!;
      // the first worker has run the workflow (it looked at the invoice once) and waits for news
      await until(
        () => looks(d.txId),
        (n) => n >= 1,
        30_000,
        'the first look at the invoice',
      );
      await first.kill();
      // paid and settled while no worker runs: the webhooks become signals waiting in the history
      await btcpay.pay(inv.id);
      await btcpay.confirm(inv.id);
      const answers = btcpay.deliveries.filter((x) => x.invoiceId === inv.id).map((x) => x.answered);
      assert.ok(
        answers.every((a) => a === 200),
        JSON.stringify(answers),
      );
      assert.equal(await usdBalance(accountId), 0n);
      await startWorker(env);
      assert.equal(await finished(d.txId), 'Completed');
      assert.deepEqual(await creditsOf(inv.id), [usd('15')]);
      assert.equal(await usdBalance(accountId), usd('15'));
    });
  });
});
