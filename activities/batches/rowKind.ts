// biome-ignore-all lint/suspicious/noExplicitAny: row bodies are wire JSON, read field by field
// The contract every batch row kind fulfils (kinds.ts lists them; messageKind.ts is one): its own
// module so a kind defined in a file of its own imports the contract, not the list.
import type { ModelInfo } from '../catalog/catalog.js';
import type { InferenceResult, Usage } from '../core/types.js';
import type { Bill } from '../inference/execute.js';
import type { PrepareInput } from '../inference/prepare.js';
import type { ModelName } from '../routing/suffixes.js';

export type BatchEndpoint = '/v1/chat/completions' | '/v1/responses' | '/v1/messages';

export interface RowKind {
  endpoint: BatchEndpoint;
  /** what request records and ledger reasons call a row of this kind */
  surface: string;
  /** the field holding the output cap */
  capField: string;
  /** the synchronous route's body schema (pure data, shared with the route): a row is checked against it */
  schema: object;
  /** the row's output cap, when it sets one */
  outputCap(body: any): number | undefined;
  /** the spec's row rules a schema cannot say; the reason a row is refused, or undefined */
  refusal(body: any): string | undefined;
  /** input a batch cannot carry out, though the synchronous route takes it (`unsupported_batch_input`) */
  unsupported?(body: any): { message: string; param?: string } | undefined;
  /** the row in internal form, exactly as the synchronous route translates it (throws RequestError) */
  translate(body: any, model: ModelInfo, name: ModelName): Pick<PrepareInput, 'request' | 'needs' | 'prefs' | 'native'>;
  /** the answer as the synchronous route would have answered it, with the row's cost */
  render(r: InferenceResult, usage: Usage, bill: Bill, row: { model: string; provider: string; body: any }): object;
}
