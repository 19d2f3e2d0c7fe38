// The API's Temporal client, connected on first use (to config.temporalAddress) and shared by
// every route that starts, signals or cancels a workflow. The client library itself (gRPC and
// Temporal's protobufs) is loaded on that first use too: an API process with no Temporal server
// configured (one that only serves chat) never loads it. One that has one warms it at start-up
// (warmTemporalClient), so the first job does not wait for it.
import type { Client, Connection } from '@temporalio/client';
import { config } from './config.js';
import { explainTemporalError, temporalConnectionOptions } from './temporalConnection.js';

let client: Promise<Client> | undefined;
let connection: Connection | undefined;

/**
 * gRPC closes a channel that has made no call for a while (30 minutes by default), and the next
 * call then connects again (a few ms on loopback, a TLS handshake to a remote cluster): a gateway
 * that accepts a job now and then would pay it on most of them. This keeps the channel as long as
 * a timer can wait; the SDK's keepalive pings (every 30 s) keep the connection itself alive.
 */
const IDLE_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * How long a caller waits for the engine when accepting a job before its 503, and how long
 * connecting may take: the SDK would otherwise try to connect for 10 s and retry an unreachable
 * server for about as long again, while the caller holds the request open for an answer that is no.
 */
export const ENGINE_DEADLINE_MS = 1500;
const CONNECT_TIMEOUT_MS = 1000;

export function temporal(): Promise<Client> {
  client ??= (async () => {
    if (!config.temporalAddress) throw new Error('no Temporal server configured (TEMPORAL_ADDRESS)');
    const sdk = await import('@temporalio/client');
    const address = config.temporalAddress;
    connection = await sdk.Connection.connect({
      ...temporalConnectionOptions(address),
      connectTimeout: CONNECT_TIMEOUT_MS,
      // an unreachable engine is retried for about a second (0.17 + 0.29 + 0.49 s apart), not the
      // SDK's ten attempts over ten seconds and more: the caller waiting on a job start hears 503
      // within ENGINE_DEADLINE_MS, and a call cut off by that deadline leaves no retry behind
      interceptors: [sdk.makeGrpcRetryInterceptor(sdk.defaultGrpcRetryOptions({ maxAttempts: 4 }))],
      channelArgs: { 'grpc.client_idle_timeout_ms': IDLE_TIMEOUT_MS },
    }).catch(async (err: unknown) => {
      throw await explainTemporalError(err, address);
    });
    return new sdk.Client({ connection, namespace: config.temporalNamespace });
  })();
  client.catch(() => (client = undefined));
  return client;
}

/**
 * Load the client library and connect in the background, when a Temporal server is configured.
 * Measured (bench/jobs.ts): the first job otherwise waits 0.4-1.5 s for it, against a few ms for
 * the next ones; it costs the process about 20 MB, which the first job would load anyway. A
 * server not reachable yet is no error here: the first job connects (or answers 503).
 */
export function warmTemporalClient(log: (message: string) => void): void {
  if (!config.temporalAddress) return;
  temporal().catch((err: Error) => log(`Temporal at ${config.temporalAddress} not reachable yet: ${err.message}`));
}

/** Run `call` (one or more client calls) against the engine, cut off at `deadline` (epoch ms), retries included. */
export async function beforeDeadline<T>(deadline: number, call: (client: Client) => Promise<T>): Promise<T> {
  const c = await temporal();
  return connection ? connection.withDeadline(deadline, () => call(c)) : call(c);
}

export async function closeTemporalClient(): Promise<void> {
  client = undefined;
  await connection?.close().catch(() => undefined);
  connection = undefined;
}
