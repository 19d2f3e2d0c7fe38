// The API's Temporal client, connected on first use (to config.temporalAddress) and shared by
// every route that starts, signals or cancels a workflow. The client library itself (gRPC and
// Temporal's protobufs, about 25-45 MB of memory) is loaded on that first use too: an API process
// that only serves chat never needs it.
import type { Client, Connection } from '@temporalio/client';
import { config } from './config.js';

let client: Promise<Client> | undefined;
let connection: Connection | undefined;

export function temporal(): Promise<Client> {
  client ??= (async () => {
    if (!config.temporalAddress) throw new Error('no Temporal server configured (TEMPORAL_ADDRESS)');
    const sdk = await import('@temporalio/client');
    connection = await sdk.Connection.connect({ address: config.temporalAddress });
    return new sdk.Client({ connection, namespace: config.temporalNamespace });
  })();
  client.catch(() => (client = undefined));
  return client;
}

export async function closeTemporalClient(): Promise<void> {
  client = undefined;
  await connection?.close().catch(() => undefined);
  connection = undefined;
}
