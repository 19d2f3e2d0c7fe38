// Fakes for the text pipeline's unit tests: an Exchange that records what would go over HTTP, a
// TextRun over a codec of the test's making, and calls that answer without a provider.
import type { Caller } from '../../activities/core/caller.js';
import type { ModelInfo } from '../../activities/catalog/catalog.js';
import type { InferenceResult, TextBody } from '../../activities/core/types.js';
import type { TextCodec, Translated } from '../../activities/inference/codec.js';
import type { Exchange, StreamSink } from '../../activities/inference/exchange.js';
import type { InferenceCall } from '../../activities/inference/execute.js';
import { TextRun } from '../../activities/inference/textRun.js';
import type { MeteredCall } from '../../activities/metering/meteredCall.js';
import { parseModelName } from '../../activities/routing/suffixes.js';

export const caller = (over: Partial<Caller> = {}): Caller => ({
  keyId: 'key_1',
  accountId: 'acct_1',
  keyPrefix: 'sk-1',
  userId: null,
  dailyRequestLimit: null,
  dailyUsdLimit: null,
  providerAllow: null,
  providerDeny: [],
  zdrOnly: false,
  billingMode: 'paygo_only' as Caller['billingMode'],
  ...over,
});

export class FakeSink implements StreamSink {
  closed = false;
  ended = false;
  readonly frames: Array<{ data: unknown; event?: string }> = [];
  data(data: unknown, event?: string): undefined {
    this.frames.push({ data, event });
    return undefined;
  }
  end(): void {
    this.ended = true;
  }
}

export class FakeExchange implements Exchange {
  caller = caller();
  requestId = 'req_0123456789abcdef';
  envelope = 'openai' as const;
  forcePaygo = false;
  thinkingPath = false;
  x402: Exchange['x402'] = undefined;
  path = '/api/v1/chat/completions';
  headers: Record<string, string | undefined> = {};
  readonly sent: Array<{ body: unknown; type?: string }> = [];
  readonly set = new Map<string, string>();
  readonly onDelivery: MeteredCall[] = [];
  sink = new FakeSink();
  header(name: string): string {
    return this.headers[name.toLowerCase()] ?? '';
  }
  origin(): string {
    return 'http://gateway.test';
  }
  signal(): AbortSignal {
    return new AbortController().signal;
  }
  setHeader(name: string, value: string): void {
    this.set.set(name, value);
  }
  send(body: unknown, type?: string): void {
    this.sent.push({ body, type });
  }
  stream(): StreamSink {
    return this.sink;
  }
  chargeOnDelivery(metered: MeteredCall): void {
    this.onDelivery.push(metered);
  }
}

export const model = (id = 'openai/gpt-test'): ModelInfo =>
  ({ id, options: {}, routes: [], contextLength: 8192, capabilities: {} }) as unknown as ModelInfo;

export const codec = (over: Partial<TextCodec> = {}): TextCodec =>
  ({
    surface: 'chat',
    envelope: 'openai',
    schema: {},
    translate: () => ({}) as Translated,
    whole: () => ({}),
    ...over,
  }) as TextCodec;

/** A run at the stage where the model is known and the body translated (`input`). */
export function textRun(opts: { codec?: TextCodec; body?: TextBody; name?: string; ex?: FakeExchange } = {}) {
  const ex = opts.ex ?? new FakeExchange();
  const run = new TextRun(opts.codec ?? codec(), ex, opts.body ?? { model: opts.name ?? 'openai/gpt-test' });
  run.model = model();
  run.name = parseModelName(opts.name ?? 'openai/gpt-test', (b) => b === 'openai/gpt-test');
  run.input = {
    request: { messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], sampling: {} },
    needs: { tools: false, images: false, structuredOutput: false, caching: false },
    prefs: {},
  } as unknown as Translated;
  return { run, ex };
}

export const result = (over: Partial<InferenceResult> = {}): InferenceResult =>
  ({ content: 'hello', toolCalls: [], finishReason: 'stop', usage: null, ...over }) as InferenceResult;

/** A metered call that records what became of it. */
export function fakeMetered() {
  const seen: string[] = [];
  const metered = {
    isDelivered: false,
    abandon: async (code: string) => {
      seen.push(`abandon:${code}`);
    },
    delivered: () => {
      seen.push('delivered');
    },
  };
  return { metered: metered as unknown as MeteredCall, seen };
}

/** A prepared call that answers `answer` without a provider, recording fail/settle. */
export function fakeCall(answer: InferenceResult) {
  const seen: string[] = [];
  const usage = { promptTokens: 1, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 1, reasoningTokens: 0 };
  const bill = { amount: 1, currency: 'USD', cost: 1, paymentSource: 'USD', remainingBalance: 9 };
  const call = {
    ctx: { request: { reasoning: undefined, messages: [] }, requestId: 'req_0123456789abcdef', modelId: 'm' },
    metered: fakeMetered().metered,
    complete: async () => ({ result: answer, route: { provider: { id: 'openai' } } }),
    fail: async (code: string) => {
      seen.push(`fail:${code}`);
    },
    settle: async () => {
      seen.push('settle');
      return { usage, bill };
    },
  };
  return { call: call as unknown as InferenceCall, seen };
}
