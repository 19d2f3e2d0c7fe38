// Loads a workflow history exported as JSON (`temporal workflow show --output json`, the format
// every Temporal tool reads) into the protobuf History that Worker.runReplayHistory replays.
// The SDK's own historyFromJSON is not used: with the protobufjs copies this install resolves,
// its JSON reader and Temporal's message types come from two instances of protobufjs and refuse
// each other ("type must be a Type"), so the reader is taken from @temporalio/proto's own copy.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as proto from '@temporalio/proto';

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
