// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The translation matrix: every text surface × every upstream protocol, streaming and not, with
// a tool call in the middle. Because the surfaces share one internal request, the same
// conversation must reach an upstream as the SAME request body whichever surface it came
// through (when translated), and come back as the same answer, billed the same. The native cells
// (chat → OpenAI protocol, messages → Anthropic) are passed through instead: there the upstream
// must receive the caller's own body with only the gateway's edits.
import assert from 'node:assert/strict';
import { startApi, newAccount, apiPost } from './support/api.js';
import { readSse } from './support/chatEnv.js';
import { startOpenAIUpstream, type OpenAIUpstream } from './support/upstreams/openai.js';
import { startAnthropicUpstream, type AnthropicUpstream } from './support/upstreams/anthropic.js';
import { startGeminiUpstream, type GeminiUpstream } from './support/upstreams/gemini.js';
import { assertBooksBalance } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';
import type { SplitWrites } from './support/upstreams/split.js';

interface Turn {
  toolCall?: { id: string; name: string; args: unknown };
  text: string;
  cost: number;
  sent?: any;
}

// characters of 2, 3 and 4 bytes, which come back in the streamed answers (a split stream cuts them)
const QUESTION = 'What is the weather in Paris — and in Zürich, 東京? 🌦';
const TOOL_RESULT = '{"temp_c":21,"sky":"clear ☀","feels":"très doux"}';
const ENV = [
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'GEMINI_API_KEY',
  'GEMINI_BASE_URL',
  'OPENROUTER_API_KEY',
];

describe('translation matrix: surfaces × protocols × streaming', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let key: string;
  let openai: OpenAIUpstream;
  let anthropic: AnthropicUpstream;
  let gemini: GeminiUpstream;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    openai = await startOpenAIUpstream();
    anthropic = await startAnthropicUpstream();
    gemini = await startGeminiUpstream();
    restoreEnv = await useProviderEnv(
      {
        OPENAI_API_KEY: openai.apiKey,
        OPENAI_BASE_URL: openai.url,
        ANTHROPIC_API_KEY: anthropic.apiKey,
        ANTHROPIC_BASE_URL: anthropic.url,
        GEMINI_API_KEY: gemini.apiKey,
        GEMINI_BASE_URL: gemini.url,
      },
      ENV,
    );
    api = await startApi();
    ({ key } = await newAccount('5'));
  });
  after(async () => {
    await api.close();
    await Promise.all([openai.close(), anthropic.close(), gemini.close()]);
    await restoreEnv();
  });
  afterEach(async () => {
    for (const up of [openai, anthropic, gemini]) up.splitWrites(undefined);
    await assertBooksBalance();
  });

  const post = async (path: string, body: object) => {
    const res = await apiPost(api.base, path, body, { key });
    assert.equal(res.status, 200, await res.clone().text());
    return res;
  };

  const weather = {
    name: 'get_weather',
    description: 'Current weather',
    schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  };

  /** The chat surface: turn 1 asks, turn 2 (when `call` is given) returns the tool result. */
  async function chat(model: string, stream: boolean, call?: Turn['toolCall']): Promise<Turn> {
    const messages: any[] = [{ role: 'user', content: QUESTION }];
    if (call) {
      messages.push({
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } },
        ],
      });
      messages.push({ role: 'tool', tool_call_id: call.id, content: TOOL_RESULT });
    }
    const body = {
      model,
      messages,
      max_tokens: 200,
      stream,
      tools: [
        {
          type: 'function',
          function: { name: weather.name, description: weather.description, parameters: weather.schema },
        },
      ],
    };
    const res = await post('/api/v1/chat/completions', body);
    if (!stream) {
      const j = await res.json();
      const tc = j.choices[0].message.tool_calls?.[0];
      return {
        sent: body,
        text: j.choices[0].message.content ?? '',
        cost: j.cost,
        toolCall: tc && { id: tc.id, name: tc.function.name, args: JSON.parse(tc.function.arguments) },
      };
    }
    const frames = (await readSse(res)).filter((f) => f !== '[DONE]');
    let text = '';
    let args = '';
    let id = '';
    let name = '';
    for (const f of frames) {
      const d = f.choices[0]?.delta ?? {};
      text += d.content ?? '';
      for (const t of d.tool_calls ?? []) {
        id ||= t.id;
        name ||= t.function.name;
        args += t.function.arguments ?? '';
      }
    }
    return {
      sent: body,
      text,
      cost: frames.at(-1).cost,
      toolCall: name ? { id, name, args: JSON.parse(args) } : undefined,
    };
  }

  /** The message-style surface, same conversation. */
  async function messages(model: string, stream: boolean, call?: Turn['toolCall']): Promise<Turn> {
    const msgs: any[] = [{ role: 'user', content: QUESTION }];
    if (call) {
      msgs.push({ role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: call.name, input: call.args }] });
      msgs.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: TOOL_RESULT }] });
    }
    const body = {
      model,
      messages: msgs,
      max_tokens: 200,
      stream,
      tools: [{ name: weather.name, description: weather.description, input_schema: weather.schema }],
    };
    const res = await post('/api/v1/messages', body);
    if (!stream) {
      const j = await res.json();
      const tu = j.content.find((b: any) => b.type === 'tool_use');
      return {
        sent: body,
        text: j.content
          .filter((b: any) => b.type === 'text')
          .map((b: any) => b.text)
          .join(''),
        cost: j.cost,
        toolCall: tu && { id: tu.id, name: tu.name, args: tu.input },
      };
    }
    const events = (await readSse(res)).filter((f) => f !== '[DONE]');
    let text = '';
    let args = '';
    let id = '';
    let name = '';
    let cost = 0;
    for (const e of events) {
      if (e.type === 'content_block_start' && e.content_block.type === 'tool_use') ({ id, name } = e.content_block);
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
      if (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta') args += e.delta.partial_json;
      if (e.type === 'message_delta') cost = e.cost;
    }
    return { sent: body, text, cost, toolCall: name ? { id, name, args: JSON.parse(args || '{}') } : undefined };
  }

  /** The Responses surface, same conversation (function_call / function_call_output items). */
  async function responses(model: string, stream: boolean, call?: Turn['toolCall']): Promise<Turn> {
    const input: any[] = [{ role: 'user', content: QUESTION }];
    if (call) {
      input.push({ type: 'function_call', call_id: call.id, name: call.name, arguments: JSON.stringify(call.args) });
      input.push({ type: 'function_call_output', call_id: call.id, output: TOOL_RESULT });
    }
    const body = {
      model,
      input,
      max_output_tokens: 200,
      stream,
      store: false,
      tools: [{ type: 'function', name: weather.name, description: weather.description, parameters: weather.schema }],
    };
    const res = await post('/api/v1/responses', body);
    let r: any;
    if (!stream) r = await res.json();
    else {
      const events = (await readSse(res)).filter((f) => f !== '[DONE]');
      r = events.find((e) => e.type === 'response.completed' || e.type === 'response.incomplete').response;
      // the deltas must add up to what the terminal event reports
      const text = events
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join('');
      assert.equal(text, r.output_text);
    }
    const fc = r.output.find((o: any) => o.type === 'function_call');
    return {
      text: r.output_text ?? '',
      cost: r.cost,
      toolCall: fc && { id: fc.call_id, name: fc.name, args: JSON.parse(fc.arguments) },
    };
  }

  // What a passed-through body must look like upstream: the caller's, with the gateway's edits.
  const protocols = [
    {
      name: 'openai',
      model: 'gpt-4o-mini',
      scriptCall: () =>
        openai.script({ toolCalls: [{ id: 'call_matrix', name: 'get_weather', arguments: '{"city":"Paris"}' }] }),
      lastBody: () => openai.last().body,
      native: 'chat',
      // the upstream model, and the output cap under OpenAI's field name
      passedThrough: ({ max_tokens, ...sent }: any) => ({
        ...sent,
        model: 'gpt-4o-mini',
        max_completion_tokens: max_tokens,
      }),
    },
    {
      name: 'anthropic',
      model: 'claude-3-5-haiku-20241022',
      scriptCall: () =>
        anthropic.script({ toolCalls: [{ id: 'toolu_matrix', name: 'get_weather', input: { city: 'Paris' } }] }),
      lastBody: () => anthropic.last().body,
      native: 'messages',
      passedThrough: (sent: any) => ({ ...sent, model: 'claude-3-5-haiku-20241022' }),
    },
    {
      name: 'gemini',
      model: 'gemini-2.0-flash',
      scriptCall: () =>
        gemini.script({ toolCalls: [{ name: 'get_weather', args: { city: 'Paris' }, id: 'gem_matrix' }] }),
      lastBody: () => gemini.lastRequest()!.body,
      native: undefined,
      passedThrough: undefined,
    },
  ];

  // `stream` and `stream_options` differ between the streaming and non-streaming cells by design
  const strip = (b: any) =>
    JSON.parse(JSON.stringify(b), (k, v) => (k === 'stream' || k === 'stream_options' ? undefined : v));

  // Each protocol twice: its streams written in whole frames, then split at arbitrary byte
  // boundaries (inside lines, separators and characters, test/support/upstreams/split.ts): the
  // streamed answers must still be the non-streamed ones, billed the same.
  const modes: Array<[string, SplitWrites | undefined]> = [
    ['whole frames', undefined],
    ['streams split at arbitrary bytes', { seed: 10 }],
  ];
  for (const [mode, split] of modes)
    for (const p of protocols) {
      it(`${p.name}, ${mode}: chat, messages and responses, streaming and not: translated cells send the same upstream request, native cells pass the caller's through; same answers`, async () => {
        for (const up of [openai, anthropic, gemini]) up.splitWrites(split);
        const runs: Array<{ label: string; surface: string; first: Turn; second: Turn; bodies: unknown[] }> = [];
        for (const [label, surface] of [
          ['chat', chat],
          ['messages', messages],
          ['responses', responses],
        ] as const) {
          for (const stream of [false, true]) {
            p.scriptCall();
            const first = await surface(p.model, stream);
            const firstBody = p.lastBody();
            assert.ok(first.toolCall, `${label}/${stream}: a tool call`);
            const second = await surface(p.model, stream, first.toolCall);
            const secondBody = p.lastBody();
            runs.push({
              label: `${label}${stream ? ' (stream)' : ''}`,
              surface: label,
              first,
              second,
              bodies: [firstBody, secondBody],
            });
          }
        }
        const native = runs.filter((r) => r.surface === p.native);
        const [ref, ...translated] = runs.filter((r) => r.surface !== p.native);
        assert.equal(ref.first.toolCall!.name, 'get_weather');
        assert.deepEqual(ref.first.toolCall!.args, { city: 'Paris' });
        assert.ok(ref.second.text.length > 0);
        for (const r of [...translated, ...native]) {
          assert.deepEqual(
            { name: r.first.toolCall!.name, args: r.first.toolCall!.args },
            { name: ref.first.toolCall!.name, args: ref.first.toolCall!.args },
            r.label,
          );
          assert.equal(r.second.text, ref.second.text, `${r.label}: same final answer`);
        }
        for (const r of translated) {
          assert.equal(r.first.cost, ref.first.cost, `${r.label}: same bill for the tool-call turn`);
          assert.equal(r.second.cost, ref.second.cost, `${r.label}: same bill for the answer turn`);
          assert.deepEqual(strip(r.bodies[0]), strip(ref.bodies[0]), `${r.label}: same upstream request (turn 1)`);
          assert.deepEqual(strip(r.bodies[1]), strip(ref.bodies[1]), `${r.label}: same upstream request (turn 2)`);
        }
        assert.equal(native.length, p.native ? 2 : 0);
        for (const r of native) {
          assert.deepEqual(
            strip(r.bodies[0]),
            strip(p.passedThrough!(r.first.sent)),
            `${r.label}: the caller's body passed through (turn 1)`,
          );
          assert.deepEqual(
            strip(r.bodies[1]),
            strip(p.passedThrough!(r.second.sent)),
            `${r.label}: the caller's body passed through (turn 2)`,
          );
          // billed on the upstream's usage of the body it received (which may count differently from the translation's)
          assert.ok(r.first.cost > 0 && r.second.cost > 0, `${r.label}: billed`);
        }
        // both native cells (streaming and not) received the same body and were billed the same
        if (native.length === 2) {
          assert.equal(native[1].first.cost, native[0].first.cost);
          assert.equal(native[1].second.cost, native[0].second.cost);
        }
      });
    }
});
