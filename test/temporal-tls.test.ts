// Temporal beyond the dev server: the API's client and the worker reach a Temporal dev server only
// through a TLS-terminating proxy (certificates made by openssl here), over TLS and over mTLS, and run
// a real job there; a client without a certificate is refused under mTLS, a wrong CA fails with an error
// naming the setting; Temporal Cloud's API key reaches the server as gRPC `authorization` metadata.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { config, type TemporalSecurity } from '../activities/config.js';
import { closeTemporalClient, temporal } from '../activities/temporalClient.js';
import { temporalConnectionOptions } from '../activities/temporalConnection.js';
import { createAccount } from '../activities/accounts/accounts.js';
import { balances, credit } from '../activities/ledger/ledger.js';
import { reserve } from '../activities/ledger/holds.js';
import { parseAmount } from '../activities/core/money.js';
import { SEARCH_ATTRIBUTES } from '../bin/worker.js';
import { ensureSearchAttributes, findTemporalCli, startDevServer, type DevServer } from '../temporal-dev/index.js';
import { makeTestPki, SERVER_NAME, startTlsProxy, type TestPki, type TlsProxy } from './support/tlsProxy.js';
import { startWorkerProcess, type WorkerProcess } from './support/workerProcess.js';
import { keepConfig } from './support/keepConfig.js';

describe('Temporal over TLS, mTLS and with an API key', function () {
  this.timeout(180_000);
  keepConfig();
  let pki: TestPki;
  let server: DevServer;
  const stops: Array<() => Promise<unknown>> = [];

  before(async () => {
    // a client an earlier file of this process left cached talks to another server, where no worker
    // polls this file's task queues
    await closeTemporalClient();
    pki = makeTestPki();
    // a bare server: the search attributes are registered through the proxy below, as start-up does
    server = await startDevServer({
      cli: await findTemporalCli(),
      namespace: config.temporalNamespace,
      searchAttributes: {},
      uiPort: null,
    });
  });
  afterEach(async () => {
    await closeTemporalClient();
    for (const stop of stops.splice(0)) await stop().catch(() => undefined);
  });
  after(async () => {
    await server?.stop();
    pki?.remove();
  });

  /** A job through the API's client, run by a worker process that knows Temporal only by the proxy's address. */
  async function jobThroughProxy(proxy: TlsProxy, security: TemporalSecurity, env: Record<string, string>) {
    config.temporalAddress = proxy.address;
    config.temporalSecurity = security;
    const { address: _, ...secure } = temporalConnectionOptions(proxy.address);
    await ensureSearchAttributes(proxy.address, config.temporalNamespace, SEARCH_ATTRIBUTES, secure);
    const taskQueue = `tls-${randomUUID()}`;
    const worker: WorkerProcess = await startWorkerProcess({
      TEMPORAL_ADDRESS: proxy.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      TEMPORAL_NAMESPACE: config.temporalNamespace,
      TEMPORAL_TLS_SERVER_NAME: SERVER_NAME,
      TEMPORAL_TLS_CA: pki.ca,
      ...env,
    });
    stops.push(() => worker.stop());
    const before = proxy.accepted;
    // the real job: the hold sweeper releases an expired hold through its activity
    const a = await createAccount(`tls-${randomUUID().slice(0, 8)}`);
    const usd = (s: string) => parseAmount(s, 'USD');
    await credit({ accountId: a.id, currency: 'USD', amount: usd('1'), reason: 'test', idempotencyKey: `tls:${a.id}` });
    await reserve({ accountId: a.id, usd: usd('0.4'), idempotencyKey: `tls-hold:${a.id}`, ttlSeconds: 0 });
    const client = await temporal();
    const released = await client.workflow.execute('sweepExpiredHolds', {
      taskQueue,
      workflowId: `tls-sweep-${randomUUID()}`,
      args: [],
    });
    assert.ok((released as number) >= 1);
    assert.equal((await balances(a.id))!.USD.held, 0n);
    assert.ok(proxy.accepted > before, 'the API client connected through the proxy');
    const attrs = await client.connection.operatorService.listSearchAttributes({ namespace: config.temporalNamespace });
    assert.ok(attrs.customAttributes?.SwitchyardAccountId !== undefined, 'search attributes registered through TLS');
  }

  it('TLS: the API client and a worker process run a job through a TLS proxy', async () => {
    const proxy = await startTlsProxy(pki, server.address, { mutual: false });
    stops.push(() => proxy.close());
    await jobThroughProxy(proxy, { tls: true, caFile: pki.ca, serverName: SERVER_NAME }, {});
    // the API client's connection, the worker's (native) one, its schedules' and search attributes' clients
    assert.ok(proxy.accepted >= 2, `connections through the proxy: ${proxy.accepted}`);
  });

  it('mTLS: a job with client certificates; a client without one is refused', async () => {
    const proxy = await startTlsProxy(pki, server.address, { mutual: true });
    stops.push(() => proxy.close());
    const mutual = {
      tls: true,
      caFile: pki.ca,
      serverName: SERVER_NAME,
      certFile: pki.clientCert,
      keyFile: pki.clientKey,
    };
    await jobThroughProxy(proxy, mutual, { TEMPORAL_TLS_CERT: pki.clientCert, TEMPORAL_TLS_KEY: pki.clientKey });
    assert.ok(proxy.accepted >= 2, `connections through the proxy: ${proxy.accepted}`);

    await closeTemporalClient();
    config.temporalSecurity = { tls: true, caFile: pki.ca, serverName: SERVER_NAME };
    const accepted = proxy.accepted;
    await assert.rejects(temporal(), /cannot reach Temporal at 127\.0\.0\.1:\d+/);
    assert.equal(proxy.accepted, accepted, 'no session without a client certificate');
    assert.ok(proxy.refused.length > 0, 'the proxy refused the handshake');
  });

  it('a wrong CA fails with an error that names TEMPORAL_TLS_CA', async () => {
    const proxy = await startTlsProxy(pki, server.address, { mutual: false });
    stops.push(() => proxy.close());
    config.temporalAddress = proxy.address;
    config.temporalSecurity = { tls: true, caFile: pki.otherCa, serverName: SERVER_NAME };
    const err = await temporal().then(
      () => assert.fail('connected with a CA that did not sign the server certificate'),
      (e: Error) => e,
    );
    assert.match(err.message, /cannot reach Temporal at .*TLS handshake: .*certificate.*TEMPORAL_TLS_CA/s);
    assert.equal(proxy.accepted, 0);
  });

  it('an unreadable certificate file is named in the error', () => {
    assert.throws(
      () => temporalConnectionOptions('x:1', { tls: true, caFile: '/nonexistent/ca.pem' }),
      /TEMPORAL_TLS_CA: cannot read \/nonexistent\/ca\.pem/,
    );
  });

  it("Temporal Cloud's API key: TLS on by default, sent as authorization metadata by the client and the worker", async () => {
    const key = `test-key-${randomUUID()}`;
    assert.deepEqual(temporalConnectionOptions('x:7233', { tls: true, apiKey: key }), {
      address: 'x:7233',
      apiKey: key,
      tls: {},
    });
    // an h2 endpoint that records each call's authorization and answers UNAUTHENTICATED, as a wrong key gets
    const seen: string[] = [];
    const h2 = http2.createSecureServer({ key: readFileSync(pki.serverKey), cert: readFileSync(pki.serverCert) });
    h2.on('stream', (stream, headers) => {
      seen.push(String(headers.authorization ?? ''));
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'bad key' },
        { endStream: true },
      );
    });
    const sessions = new Set<http2.ServerHttp2Session>();
    h2.on('session', (s) => sessions.add(s));
    await new Promise<void>((resolve) => h2.listen(0, '127.0.0.1', resolve));
    stops.push(() => {
      for (const s of sessions) s.destroy();
      return new Promise((resolve) => h2.close(resolve));
    });
    const address = `127.0.0.1:${(h2.address() as AddressInfo).port}`;
    config.temporalAddress = address;
    config.temporalSecurity = { tls: true, caFile: pki.ca, serverName: SERVER_NAME, apiKey: key };
    await assert.rejects(temporal(), /cannot reach Temporal/);
    assert.ok(seen.includes(`Bearer ${key}`), `API client's calls carried: ${JSON.stringify(seen)}`);

    seen.length = 0;
    const { NativeConnection } = await import('@temporalio/worker');
    await NativeConnection.connect(temporalConnectionOptions(address)).then(
      (c) => c.close(),
      () => undefined,
    );
    assert.ok(seen.includes(`Bearer ${key}`), `worker's calls carried: ${JSON.stringify(seen)}`);
  });
});
