// Workflow histories as JSON files (`temporal workflow show --output json`, the format every
// Temporal tool reads): exported from a running server, and loaded into the protobuf History that
// Worker.runReplayHistory replays.
// The SDK's own historyFromJSON is not used: with the protobufjs copies this install resolves,
// its JSON reader and Temporal's message types come from two instances of protobufjs and refuse
// each other ("type must be a Type"), so the reader is taken from @temporalio/proto's own copy.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as proto from '@temporalio/proto';
import { config } from '../../activities/config.js';
import { findTemporalCli } from '../../temporal-dev/index.js';

type History = proto.temporal.api.history.v1.IHistory;

export function loadHistoryJson(file: string): History {
  const require = createRequire(import.meta.url);
  const fromProto = createRequire(require.resolve('@temporalio/proto'));
  const { fromJson } = fromProto('protobufjs/ext/protojson') as {
    fromJson(type: unknown, json: unknown, opts: object): History | null;
  };
  const { patchProtobufRoot } = require('@temporalio/proto/lib/patch-protobuf-root') as {
    patchProtobufRoot(root: unknown): { lookupType(name: string): unknown };
  };
  const root = patchProtobufRoot(require('@temporalio/proto'));
  const history = fromJson(root.lookupType('temporal.api.history.v1.History'), JSON.parse(readFileSync(file, 'utf8')), {
    ignoreUnknownFields: true,
  });
  if (!history?.events?.length) throw new Error(`${file} holds no workflow history`);
  return history;
}

/** Writes the history of workflow `workflowId` on the Temporal server at `address` to `file`, with the CLI. */
export async function exportHistoryJson(address: string, workflowId: string, file: string): Promise<void> {
  const out = execFileSync(await findTemporalCli(), [
    'workflow',
    'show',
    '--workflow-id',
    workflowId,
    '--address',
    address,
    '--namespace',
    config.temporalNamespace,
    '--output',
    'json',
  ]);
  writeFileSync(file, out);
}
