// The API's Temporal client, connected on first use (to config.temporalAddress) and shared by
// every route that starts, signals or cancels a workflow.
import { Client, Connection } from '@temporalio/client';
import { config } from './config.js';

let client: Promise<Client> | undefined;
let connection: Connection | undefined;

export function temporal(): Promise<Client> {
  client ??= (async () => {
    if (!config.temporalAddress) throw new Error('no Temporal server configured (TEMPORAL_ADDRESS)');
    connection = await Connection.connect({ address: config.temporalAddress });
    return new Client({ connection, namespace: config.temporalNamespace });
  })();
  client.catch(() => (client = undefined));
  return client;
}

export async function closeTemporalClient(): Promise<void> {
  client = undefined;
  await connection?.close().catch(() => undefined);
  connection = undefined;
}
