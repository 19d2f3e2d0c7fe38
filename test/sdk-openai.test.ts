// The official `openai` SDK, pointed at the gateway, unchanged.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startChatBench, type ChatBench } from './support/chatEnv.js';
import { assertBooksBalance } from './support/books.js';

describe('openai SDK against the gateway', function () {
  this.timeout(60_000);
  let b: ChatBench;
  let client: OpenAI;
  before(async () => {
    b = await startChatBench();
    const { key } = await b.account('5');
    client = new OpenAI({ apiKey: key, baseURL: `${b.base}/v1`, maxRetries: 0 });
  });
  after(() => b.close());
  afterEach(() => assertBooksBalance());

  it('lists models', async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.ok(ids.includes('openai/gpt-4o-mini'));
  });

  it('creates a chat completion', async () => {
    const r = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Say hello' }],
    });
    assert.match(r.choices[0].message.content!, /hello/i);
    assert.ok(r.usage!.total_tokens > 0);
    assert.ok((r as unknown as { x_nanogpt_pricing: { cost: number } }).x_nanogpt_pricing.cost > 0);
  });

  it('streams a chat completion with usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Say hello' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: { completion_tokens?: number } | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.match(text, /hello/i);
    assert.ok((usage?.completion_tokens ?? 0) > 0);
  });

  it('calls tools, streaming and not, and the stream helper assembles the arguments', async () => {
    const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    b.openai.script({ toolCalls: [{ id: 'call_w', name: 'get_weather', arguments: '{"city":"Oslo"}' }] });
    const r = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'weather?' }],
      tools,
    });
    assert.equal(r.choices[0].message.tool_calls![0].type, 'function');
    b.openai.script({ toolCalls: [{ id: 'call_w2', name: 'get_weather', arguments: '{"city":"Lima"}' }] });
    const runner = client.chat.completions.stream({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'weather?' }],
      tools,
    });
    const final = await runner.finalChatCompletion();
    const call = final.choices[0].message.tool_calls![0] as { function: { name: string; arguments: string } };
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Lima' });
    // the tool result goes back in the next turn
    const follow = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      messages: [
        { role: 'user', content: 'weather?' },
        final.choices[0].message as OpenAI.Chat.Completions.ChatCompletionMessageParam,
        { role: 'tool', tool_call_id: 'call_w2', content: '{"temp":21}' },
      ],
    });
    assert.equal(follow.choices[0].finish_reason, 'stop');
    assert.equal(b.openai.last().body.messages.at(-1).tool_call_id, 'call_w2');
  });

  it('asks for JSON-schema output, and parses it with the SDK helper', async () => {
    const schema = {
      type: 'object',
      properties: { answer: { type: 'string' } },
      required: ['answer'],
      additionalProperties: false,
    };
    b.openai.script({ text: '{"answer":"42"}' });
    const r = await client.chat.completions.parse({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'the answer?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
    });
    assert.deepEqual(r.choices[0].message.parsed, { answer: '42' });
    assert.equal(b.openai.last().body.response_format.json_schema.name, 'answer');
  });

  // what zod 4's z.toJSONSchema(z.object({ city: z.string(), days: z.number().int() })) emits, as
  // LangChain JS's withStructuredOutput sends it: the `$schema` line is zod's default
  const zod4 = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: {
      city: { type: 'string' },
      days: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
    },
    required: ['city', 'days'],
    additionalProperties: false,
  };
  const drafts = [
    zod4.$schema,
    'https://json-schema.org/draft/2019-09/schema',
    'http://json-schema.org/draft-07/schema#',
  ];

  it('takes schemas that declare their draft (zod 4 and others) in response_format, tools and text.format', async () => {
    for (const $schema of drafts) {
      const schema = { ...zod4, $schema };
      b.openai.script({ text: '{"city":"Oslo","days":2}' });
      const r = await client.chat.completions.parse({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'plan' }],
        response_format: { type: 'json_schema', json_schema: { name: 'plan', schema, strict: true } },
      });
      assert.deepEqual(r.choices[0].message.parsed, { city: 'Oslo', days: 2 }, $schema);
      assert.equal(b.openai.last().body.response_format.json_schema.schema.$schema, $schema);

      b.openai.script({ toolCalls: [{ id: 'call_p', name: 'plan', arguments: '{"city":"Oslo","days":2}' }] });
      const t = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'plan' }],
        tools: [{ type: 'function', function: { name: 'plan', parameters: schema } }],
      });
      assert.equal(t.choices[0].message.tool_calls?.length, 1, $schema);

      b.openai.script({ text: '{"city":"Oslo","days":2}' });
      const resp = await client.responses.create({
        model: 'gpt-4o-mini',
        input: 'plan',
        text: { format: { type: 'json_schema', name: 'plan', schema, strict: true } },
        tools: [{ type: 'function', name: 'plan', parameters: schema, strict: true }],
      });
      assert.deepEqual(JSON.parse(resp.output_text), { city: 'Oslo', days: 2 }, $schema);
    }
  });

  it('takes the same $id in two requests (nothing of a caller schema is kept)', async () => {
    for (let i = 0; i < 2; i++) {
      b.openai.script({ text: '{"city":"Oslo","days":2}' });
      await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'plan' }],
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'plan', schema: { ...zod4, $id: 'https://example.com/plan.json' } },
        },
      });
    }
  });

  it("names Responses' own parameter when text.format.schema is refused", async () => {
    const refused = async (schema: Record<string, unknown>, param: string) =>
      assert.rejects(
        client.responses.create({
          model: 'gpt-4o-mini',
          input: 'plan',
          text: { format: { type: 'json_schema', name: 'plan', schema } },
        }),
        (e: unknown) => {
          assert.ok(e instanceof OpenAI.BadRequestError);
          assert.equal(e.code, 'invalid_json_schema');
          assert.equal(e.param, param);
          return true;
        },
      );
    await refused({ ...zod4, properties: { city: { type: 'no-such-type' } } }, 'text.format.schema');
    await refused({ ...zod4, $schema: 'http://example.com/my-draft' }, 'text.format.schema.$schema');
  });

  it("raises the SDK's typed errors for the gateway's error envelopes", async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'nope/never', messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.NotFoundError);
        assert.equal((e as InstanceType<typeof OpenAI.APIError>).code, 'model_not_found');
        return true;
      },
    );
    const stranger = new OpenAI({
      apiKey: 'sk-nanogpt-00000000-0000-4000-8000-000000000000',
      baseURL: `${b.base}/v1`,
      maxRetries: 0,
    });
    await assert.rejects(
      stranger.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
      OpenAI.AuthenticationError,
    );
  });
});
