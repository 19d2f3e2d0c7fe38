// The API's Temporal client, connected on first use (to config.temporalAddress) and shared by
// every route that starts, signals or cancels a workflow. The client library itself (gRPC and
// Temporal's protobufs) is loaded on that first use too: an API process with no Temporal server
// configured (one that only serves chat) never loads it. One that has one warms it at start-up
// (warmTemporalClient), so the first job does not wait for it.
import type { Client, Connection } from '@temporalio/client';
import { config } from './config.js';

let client: Promise<Client> | undefined;
let connection: Connection | undefined;

/**
 * gRPC closes a channel that has made no call for a while (30 minutes by default), and the next
 * call then connects again (a few ms on loopback, a TLS handshake to a remote cluster): a gateway
 * that accepts a job now and then would pay it on most of them. This keeps the channel as long as
 * a timer can wait; the SDK's keepalive pings (every 30 s) keep the connection itself alive.
 */
const IDLE_TIMEOUT_MS = 2 ** 31 - 1;

export function temporal(): Promise<Client> {
  client ??= (async () => {
    if (!config.temporalAddress) throw new Error('no Temporal server configured (TEMPORAL_ADDRESS)');
    const sdk = await import('@temporalio/client');
    connection = await sdk.Connection.connect({
      address: config.temporalAddress,
      channelArgs: { 'grpc.client_idle_timeout_ms': IDLE_TIMEOUT_MS },
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

export async function closeTemporalClient(): Promise<void> {
  client = undefined;
  await connection?.close().catch(() => undefined);
  connection = undefined;
}
