// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The Responses API (`POST /api/v1/responses`) through the official `openai` SDK, pointed at the
// gateway unchanged, against the OpenAI loopback upstream (which records what it was sent).
// Every billed call is checked against its reported usage, and the books balance after each test.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startChatBench, readSse, readUntil, type ChatBench } from './support/chatEnv.js';
import { assertBooksBalance } from './support/books.js';
import { GPT_4O_MINI, textCost } from './support/prices.js';
import { waitFor } from './support/wait.js';

const MODEL = 'openai/gpt-4o-mini';
const weather = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
};

describe('responses API (OpenAI Responses wire format)', function () {
  this.timeout(60_000);
  let b: ChatBench;
  let client: OpenAI;
  let key: string;
  let accountId: string;
  before(async () => {
    b = await startChatBench();
    ({ key, accountId } = await b.account('5'));
    client = new OpenAI({ apiKey: key, baseURL: `${b.base}/v1`, maxRetries: 0 });
  });
  after(() => b.close());
  beforeEach(() => b.openai.reset());
  afterEach(() => assertBooksBalance());

  const usd = async () => (await b.usd(accountId)).amount;

  /** The charge equals the price of the reported usage (gpt-4o-mini costs the same on every route). */
  async function assertBilled(before: bigint, r: any) {
    const spent = before - (await usd());
    const u = r.usage;
    const expected = textCost(GPT_4O_MINI, {
      input: u.input_tokens,
      cached: u.input_tokens_details.cached_tokens,
      output: u.output_tokens,
    });
    assert.ok(spent > 0n, 'something was charged');
    assert.equal(spent, expected, `charged ${spent}, usage ${JSON.stringify(u)} prices to ${expected}`);
    if (r.cost !== undefined) assert.equal(Number(spent) / 1e9, r.cost);
  }

  const post = (body: unknown, path = '/api/v1/responses') => b.post(key, body, {}, path);

  it('creates a response, billed as its usage, and retrieves and deletes it', async () => {
    const before = await usd();
    const r: any = await client.responses.create({
      model: MODEL,
      input: 'Say hello',
      instructions: 'Be brief.',
      metadata: { tag: 'a' },
    });
    assert.match(r.id, /^resp_[0-9a-f]+$/);
    assert.equal(r.object, 'response');
    assert.equal(r.status, 'completed');
    assert.equal(r.output_text, 'Echo: Say hello');
    assert.equal(r.output[0].type, 'message');
    assert.match(r.output[0].id, /^msg_/);
    assert.deepEqual(r.output[0].content[0], {
      type: 'output_text',
      text: 'Echo: Say hello',
      annotations: [],
      logprobs: [],
    });
    assert.equal(r.instructions, 'Be brief.');
    assert.deepEqual(r.metadata, { tag: 'a' });
    assert.equal(r.store, true);
    assert.ok(r.completed_at >= r.created_at);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    assert.ok(r.x_nanogpt_pricing);
    await assertBilled(before, r);
    // upstream got the instructions as a system turn
    const sent = b.openai.last().body.messages;
    assert.deepEqual(sent[0], { role: 'system', content: 'Be brief.' });

    const got: any = await client.responses.retrieve(r.id);
    assert.equal(got.id, r.id);
    assert.equal(got.output_text, 'Echo: Say hello');
    await client.responses.delete(r.id);
    await assert.rejects(
      client.responses.retrieve(r.id),
      (e: any) => e.status === 404 && e.error?.type === 'not_found_error',
    );
  });

  it('answers DELETE with {id, object, deleted}', async () => {
    const r: any = await client.responses.create({ model: MODEL, input: 'hi' });
    const res = await fetch(`${b.base}/api/v1/responses/${r.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { id: r.id, object: 'response', deleted: true });
    const res2 = await fetch(`${b.base}/api/v1/responses/${r.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(res2.status, 404);
  });

  it('streams typed events with sequence numbers, ending in response.completed and [DONE]', async () => {
    const before = await usd();
    const stream = await client.responses.create({ model: MODEL, input: 'Say hello there', stream: true });
    const events: any[] = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 4), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    assert.deepEqual(types.slice(-4), [
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    events.forEach((e, i) => assert.equal(e.sequence_number, i));
    const text = events
      .filter((e) => e.type === 'response.output_text.delta')
      .map((e) => e.delta)
      .join('');
    assert.equal(text, 'Echo: Say hello there');
    const done = events.at(-1).response;
    assert.equal(done.status, 'completed');
    assert.equal(done.output_text, text);
    assert.ok(done.usage.output_tokens > 0);
    await assertBilled(before, done);
    // raw wire: event names and the [DONE] marker
    const res = await post({ model: MODEL, input: 'x', stream: true });
    const raw = await res.clone().text();
    assert.match(raw, /^event: response\.created\ndata: /);
    const frames = await readSse(res);
    assert.equal(frames.at(-1), '[DONE]');
    // a streamed response is stored too
    const got: any = await client.responses.retrieve(done.id);
    assert.equal(got.output_text, text);
  });

  it('round-trips a function tool with previous_response_id, streaming and not', async () => {
    b.openai.script({ toolCalls: [{ id: 'call_w', name: 'get_weather', arguments: '{"city":"Oslo"}' }] });
    const before = await usd();
    const r: any = await client.responses.create({ model: MODEL, input: 'weather in Oslo?', tools: [weather] });
    await assertBilled(before, r);
    const call = r.output.find((o: any) => o.type === 'function_call');
    assert.ok(call, JSON.stringify(r.output));
    assert.match(call.id, /^fc_/);
    assert.equal(call.call_id, 'call_w');
    assert.equal(call.name, 'get_weather');
    assert.equal(call.arguments, '{"city":"Oslo"}');
    // the upstream got the tool in chat shape
    assert.equal(b.openai.last().body.tools[0].function.name, 'get_weather');

    const follow: any = await client.responses.create({
      model: MODEL,
      previous_response_id: r.id,
      tools: [weather],
      input: [{ type: 'function_call_output', call_id: 'call_w', output: '{"temp":21}' }],
    });
    assert.equal(follow.status, 'completed');
    assert.equal(follow.previous_response_id, r.id);
    const sent = b.openai.last().body.messages;
    assert.deepEqual(
      sent.map((m: any) => m.role),
      ['user', 'assistant', 'tool'],
    );
    assert.equal(sent[1].tool_calls[0].id, 'call_w');
    assert.equal(sent[2].tool_call_id, 'call_w');
    assert.equal(sent[2].content, '{"temp":21}');

    // streamed tool call: argument deltas and done events
    b.openai.script({ toolCalls: [{ id: 'call_s', name: 'get_weather', arguments: '{"city":"Lima"}' }] });
    const stream = await client.responses.create({
      model: MODEL,
      input: 'weather in Lima?',
      tools: [weather],
      stream: true,
    });
    const events: any[] = [];
    for await (const e of stream) events.push(e);
    const args = events
      .filter((e) => e.type === 'response.function_call_arguments.delta')
      .map((e) => e.delta)
      .join('');
    assert.equal(args, '{"city":"Lima"}');
    const doneArgs = events.find((e) => e.type === 'response.function_call_arguments.done');
    assert.equal(doneArgs.arguments, '{"city":"Lima"}');
    const final = events.at(-1).response;
    assert.equal(final.output.find((o: any) => o.type === 'function_call').call_id, 'call_s');
    // and the chain works from a streamed response too
    await client.responses.create({
      model: MODEL,
      previous_response_id: final.id,
      input: [{ type: 'function_call_output', call_id: 'call_s', output: 'sunny' }],
    });
    assert.equal(b.openai.last().body.messages.at(-1).tool_call_id, 'call_s');
  });

  it('passes function_call items given inline in input', async () => {
    await client.responses.create({
      model: MODEL,
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'weather?' }] },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Rome"}' },
        { type: 'function_call_output', call_id: 'c1', output: 'warm' },
      ] as any,
      tools: [weather],
    });
    const sent = b.openai.last().body.messages;
    assert.deepEqual(
      sent.map((m: any) => m.role),
      ['user', 'assistant', 'tool'],
    );
  });

  it('chains turns with previous_response_id: the upstream sees the earlier turns', async () => {
    const a: any = await client.responses.create({
      model: MODEL,
      input: 'first question',
      instructions: 'old instructions',
    });
    const c: any = await client.responses.create({
      model: MODEL,
      input: 'second question',
      previous_response_id: a.id,
    });
    assert.equal(c.output_text, 'Echo: second question');
    const sent = b.openai.last().body.messages;
    assert.deepEqual(sent, [
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'Echo: first question' },
      { role: 'user', content: 'second question' },
    ]);
    const d: any = await client.responses.create({
      model: MODEL,
      input: [{ role: 'user', content: 'third' }],
      previous_response_id: c.id,
    });
    assert.equal(d.output_text, 'Echo: third');
    assert.equal(b.openai.last().body.messages.length, 5);
  });

  it('asks for json_schema output through text.format', async () => {
    const schema = {
      type: 'object',
      properties: { answer: { type: 'string' } },
      required: ['answer'],
      additionalProperties: false,
    };
    b.openai.script({ text: '{"answer":"42"}' });
    const r: any = await client.responses.create({
      model: MODEL,
      input: 'the answer?',
      text: { format: { type: 'json_schema', name: 'answer', schema, strict: true } },
    });
    assert.deepEqual(JSON.parse(r.output_text), { answer: '42' });
    assert.equal(r.text.format.type, 'json_schema');
    assert.equal(r.text.format.name, 'answer');
    const rf = b.openai.last().body.response_format;
    assert.equal(rf.type, 'json_schema');
    assert.equal(rf.json_schema.name, 'answer');
    assert.equal(rf.json_schema.strict, true);
  });

  it('store: false is not stored', async () => {
    const r: any = await client.responses.create({ model: MODEL, input: 'hi', store: false });
    assert.equal(r.store, false);
    await assert.rejects(client.responses.retrieve(r.id), (e: any) => e.status === 404);
    const res = await post({ model: MODEL, input: 'again', previous_response_id: r.id });
    assert.equal(res.status, 404);
  });

  it('reports a length cut as incomplete with max_output_tokens', async () => {
    b.openai.script({ text: 'one two three', finishReason: 'length' });
    const before = await usd();
    const r: any = await client.responses.create({ model: MODEL, input: 'count', max_output_tokens: 16 });
    assert.equal(r.status, 'incomplete');
    assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(b.openai.last().body.max_tokens ?? b.openai.last().body.max_completion_tokens, 16);
    await assertBilled(before, r);
    b.openai.script({ text: 'one two three', finishReason: 'length' });
    const res = await post({ model: MODEL, input: 'count', max_output_tokens: 16, stream: true });
    const frames = (await readSse(res)).filter((f) => f !== '[DONE]');
    assert.equal(frames.at(-1).type, 'response.incomplete');
    assert.equal(frames.at(-1).response.incomplete_details.reason, 'max_output_tokens');
  });

  it('answers bad input with 400 in the OpenAI envelope, charging nothing', async () => {
    const before = await usd();
    const cases: Array<[unknown, string | RegExp]> = [
      [{ input: 'hi' }, 'model'],
      [{ model: MODEL }, 'input'],
      [{ model: MODEL, input: [] }, 'input'],
      [{ model: MODEL, input: 'hi', tools: [{ type: 'function', function: { name: 'x' } }] }, 'tools[0].function'],
      [{ model: MODEL, input: 'hi', tools: [{ type: 'code_interpreter' }] }, 'tools[0].type'],
      [{ model: MODEL, input: 'hi', tools: [{ type: 'function', name: 'bad name!' }] }, 'tools[0].name'],
      [{ model: MODEL, input: [{ type: 'function_call_output', call_id: 'nope', output: 'x' }] }, 'input[0].call_id'],
      [
        { model: MODEL, input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] },
        'input[0].content[0].type',
      ],
      // a type that is not text is named as such, not shown as "[object Object]"
      [{ model: MODEL, input: [{ type: { a: 1 }, call_id: 'c1', output: 'x' }] }, 'input[0].type'],
      [{ model: MODEL, input: [{ role: 'user', content: [{ type: [1] }] }] }, 'input[0].content[0].type'],
      [{ model: MODEL, input: 'hi', temperature: 5 }, 'temperature'],
      [{ model: MODEL, input: 'hi', text: { format: { type: 'json_schema', schema: { type: 'object' } } } }, /name/],
      [{ model: MODEL, input: 'hi', background: true, stream: true }, 'stream'],
      [{ model: MODEL, input: 'hi', background: true, store: false }, 'store'],
    ];
    for (const [body, param] of cases) {
      const res = await post(body);
      const j: any = await res.json();
      assert.equal(res.status, 400, JSON.stringify({ body, j }));
      assert.equal(j.error.type, 'invalid_request_error');
      assert.ok(j.error.message);
      assert.doesNotMatch(j.error.message, /\[object /);
      if (typeof param === 'string') assert.equal(j.error.param, param, JSON.stringify(j));
      else assert.match(String(j.error.param), param);
    }
    assert.equal(await usd(), before);
  });

  it('refuses a lone UTF-16 surrogate in input, instructions or metadata before anything is reserved or sent', async () => {
    const before = await usd();
    const sent = b.openai.requests.length;
    for (const [body, param] of [
      [{ model: MODEL, input: 'a\ud800b' }, 'input'],
      [
        { model: MODEL, input: [{ role: 'user', content: [{ type: 'input_text', text: '\udfff' }] }] },
        'input[0].content[0].text',
      ],
      [{ model: MODEL, input: 'hi', instructions: 'x\ud83d' }, 'instructions'],
      [{ model: MODEL, input: 'hi', metadata: { 'k\udc00': 'v' } }, 'metadata.k\udc00'],
    ] as const) {
      const res = await post(body); // JSON.stringify writes a lone surrogate as its \u escape
      const j: any = await res.json();
      assert.equal(res.status, 400, JSON.stringify(j));
      assert.equal(j.error.code, 'invalid_parameter_value');
      assert.equal(j.error.param, param);
      assert.match(j.error.message, /lone UTF-16 surrogate/);
    }
    assert.equal(b.openai.requests.length, sent, 'nothing was sent upstream');
    assert.equal(await usd(), before);
    // a whole pair is a character like any other
    const ok: any = await client.responses.create({ model: MODEL, input: 'a \ud83d\ude00 b' });
    assert.equal(ok.output_text, 'Echo: a \u{1f600} b');
  });

  it('stores an answer holding what PostgreSQL cannot (NUL, a lone surrogate) with U+FFFD in its place', async () => {
    for (const stream of [false, true]) {
      b.openai.script({ text: 'nul \u0000 half \ud83d end' });
      const res = await post({ model: MODEL, input: 'go', stream });
      assert.equal(res.status, 200, await res.clone().text());
      let id: string;
      if (stream) {
        const frames = (await readSse(res)).filter((f) => f !== '[DONE]');
        assert.equal(frames.at(-1).type, 'response.completed');
        id = frames.at(-1).response.id;
      } else id = ((await res.json()) as any).id;
      const got: any = await client.responses.retrieve(id);
      assert.equal(got.output_text, 'nul \ufffd half \ufffd end', stream ? 'streamed' : 'not streamed');
      // and the conversation continues from it
      const next: any = await client.responses.create({ model: MODEL, input: 'more', previous_response_id: id });
      assert.equal(next.status, 'completed');
    }
  });

  it('ends a stream whose answer cannot be stored with an error frame, instead of leaving it open', async () => {
    const { db } = await import('../activities/db.js');
    await db().pool.query('ALTER TABLE stored_responses RENAME TO stored_responses_away');
    try {
      const res = await fetch(`${b.base}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, input: 'go', stream: true }),
        signal: AbortSignal.timeout(15_000),
      });
      assert.equal(res.status, 200);
      const frames = await readSse(res); // returns only once the stream has ended
      const last = frames.at(-1);
      assert.equal(last.error.code, 'internal_error');
      assert.doesNotMatch(JSON.stringify(last), /stored_responses|prisma/i);
    } finally {
      await db().pool.query('ALTER TABLE stored_responses_away RENAME TO stored_responses');
    }
  });

  it("404s another account's or an unknown previous_response_id, GET and DELETE", async () => {
    const r: any = await client.responses.create({ model: MODEL, input: 'mine' });
    const other = await b.account('1');
    const res = await b.post(other.key, { model: MODEL, input: 'x', previous_response_id: r.id }, {}, '/v1/responses');
    assert.equal(res.status, 404);
    const j: any = await res.json();
    assert.equal(j.error.param, 'previous_response_id');
    const get = await fetch(`${b.base}/v1/responses/${r.id}`, { headers: { authorization: `Bearer ${other.key}` } });
    assert.equal(get.status, 404);
    const del = await fetch(`${b.base}/v1/responses/${r.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${other.key}` },
    });
    assert.equal(del.status, 404);
    assert.equal((await post({ model: MODEL, input: 'x', previous_response_id: 'resp_unknown' })).status, 404);
    // still there for its owner
    assert.equal((await client.responses.retrieve(r.id)).id, r.id);
  });

  it('expires stored responses after the retention period', async () => {
    process.env.SWITCHYARD_RESPONSE_RETENTION_DAYS = '0';
    try {
      const r: any = await client.responses.create({ model: MODEL, input: 'hi' });
      await assert.rejects(client.responses.retrieve(r.id), (e: any) => e.status === 404);
    } finally {
      delete process.env.SWITCHYARD_RESPONSE_RETENTION_DAYS;
    }
  });

  it('ends a stream that breaks midway with response.failed, billing what was produced', async () => {
    b.openai.script({
      text: 'one two three four five six',
      errorAfter: 3,
      error: { message: 'boom', type: 'server_error' },
    });
    const before = await usd();
    const res = await post({ model: MODEL, input: 'go', stream: true });
    assert.equal(res.status, 200);
    const frames = (await readSse(res)).filter((f) => f !== '[DONE]');
    const last = frames.at(-1);
    assert.equal(last.type, 'response.failed');
    assert.equal(last.response.status, 'failed');
    assert.ok(last.response.error.message);
    frames.forEach((f, i) => assert.equal(f.sequence_number, i));
    const spent = before - (await usd());
    // no usage came: the README's estimate, by hand. The input "go": 2 bytes, one token per 3
    // rounded up, plus 4 for the message = 5 tokens; "one two": 7 bytes, one per 4 = 2 tokens
    const expected = textCost(GPT_4O_MINI, { input: 5, output: 2 });
    assert.equal(expected, 788n + 1260n);
    assert.equal(spent, expected, 'what was produced is billed, nothing more');
    assert.equal(Number(spent) / 1e9, last.response.cost);
  });

  it('a caller who leaves a stream midway is billed exactly what was produced', async () => {
    // the role chunk and four words, then the upstream stalls
    b.openai.script({ text: 'alpha beta gamma delta epsilon zeta', hangAfter: 5 });
    const before = await usd();
    const ac = new AbortController();
    const res = await fetch(`${b.base}/api/v1/responses`, {
      method: 'POST',
      signal: ac.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: MODEL, input: 'go', stream: true }),
    });
    await readUntil(res, '" delta"');
    ac.abort();
    await waitFor(() => b.openai.last().aborted, 5_000, 'the upstream to see the abort');
    await waitFor(async () => (await b.usd(accountId)).held === 0n, 5_000, 'the reservation to be settled');
    // "go": 5 prompt tokens (above); "alpha beta gamma delta": 22 bytes, 6 tokens
    const expected = textCost(GPT_4O_MINI, { input: 5, output: 6 });
    assert.equal(before - (await usd()), expected, 'what was produced is billed, nothing more');
  });

  it('charges nothing when the upstream fails before the first byte', async () => {
    b.openai.script({ status: 400, error: { message: 'nope' } });
    const before = await usd();
    const res = await post({ model: MODEL, input: 'go', stream: true });
    const j: any = await res.json();
    assert.equal(res.status, 400);
    assert.equal(j.error.type, 'invalid_request_error');
    assert.equal(await usd(), before);
  });
});
