// The routes older NanoGPT clients still call (README "Client compatibility"): talk-to-gemini,
// check-nano-balance, the older /api/models catalogue, the /api/v1thinking base path; and the
// local model's stop sequences reported on the message-style API.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { newAccount, startApi, apiPost } from './support/api.js';
import { assertBooksBalance } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';
import { type AnthropicUpstream, startAnthropicUpstream } from './support/upstreams/anthropic.js';

const LOCAL = 'local/stories260k';
const SONNET = 'claude-sonnet-4-20250514';

describe('legacy routes and what older clients read', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let anthropic: AnthropicUpstream;
  let restoreEnv: () => Promise<void>;
  let key: string;

  before(async () => {
    anthropic = await startAnthropicUpstream();
    restoreEnv = await useProviderEnv({ ANTHROPIC_API_KEY: anthropic.apiKey, ANTHROPIC_BASE_URL: anthropic.url }, [
      'OPENROUTER_API_KEY',
    ]);
    api = await startApi();
    ({ key } = await newAccount('5'));
  });
  after(async () => {
    await api.close();
    await anthropic.close();
    await restoreEnv();
  });
  afterEach(() => assertBooksBalance());

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    apiPost(api.base, path, body, { headers: { 'x-api-key': key, ...headers } });

  it('talk-to-gemini is talk-to-gpt: plain text and the metadata tag, errors in the legacy envelope', async () => {
    const res = await post('/api/talk-to-gemini', { model: LOCAL, prompt: 'Once upon a time' });
    assert.equal(res.status, 200);
    const text = await res.text();
    const meta = JSON.parse(text.split('<NanoGPT>')[1]!.split('</NanoGPT>')[0]!);
    assert.ok(meta.outputTokens > 0 && meta.cost > 0);
    const bad = await post('/api/talk-to-gemini', { model: 'no/such', prompt: 'x' });
    const j = (await bad.json()) as any;
    assert.equal(bad.status, 404);
    assert.equal(j.status, 404);
    assert.equal(typeof j.error, 'string');
  });

  it('check-nano-balance adds the Nano balance at the top level; check-balance does not', async () => {
    const nano = (await (await post('/api/check-nano-balance', {})).json()) as any;
    assert.equal(nano.balance, '0');
    assert.equal('nanoDepositAddress' in nano, false);
    const plain = (await (await post('/api/check-balance', {})).json()) as any;
    assert.equal('balance' in plain, false);
    const { balance: _, ...rest } = nano;
    assert.deepEqual(rest, plain, 'the rest is what check-balance says');
    const anon = await fetch(`${api.base}/api/check-nano-balance`, { method: 'POST' });
    assert.equal(anon.status, 401);
  });

  it('the older catalogue: every usable model by group, keyed by id; one group; an unknown group 404s', async () => {
    const all = (await (await fetch(`${api.base}/api/models`)).json()) as any;
    assert.equal(all.models.text[LOCAL].model, LOCAL);
    assert.equal(all.models.text[LOCAL].cost.unit, 'per_million_tokens');
    assert.equal(all.models.audio['local/espeak'].cost.billed_by, 'character');
    const count = Object.values(all.models).reduce((n: number, g: any) => n + Object.keys(g).length, 0);
    assert.equal(all.meta.count, count);
    const listed = ((await (await fetch(`${api.base}/api/v1/models`)).json()) as any).data.length;
    // /api/v1/models leaves out embedding models, which the older catalogue groups on their own
    assert.equal(count - Object.keys(all.models.embedding ?? {}).length, listed);
    const text = (await (await fetch(`${api.base}/api/models/text`)).json()) as any;
    assert.deepEqual(Object.keys(text.models), ['text']);
    const none = await fetch(`${api.base}/api/models/nonsense`);
    assert.equal(none.status, 404);
    assert.match(((await none.json()) as any).error.message, /groups are text, image/);
  });

  it('the subscription, paid and personalized text-model lists split by the plans; detailed records say which a plan covers', async () => {
    const ids = async (path: string, headers: Record<string, string> = {}) =>
      (((await (await fetch(`${api.base}${path}`, { headers })).json()) as any).data as any[]).map((m) => m.id);
    const covered = await ids('/api/subscription/v1/models');
    const paid = await ids('/api/paid/v1/models');
    // the default catalog's plan covers the built-in model; Claude is only paid for
    assert.ok(covered.includes(LOCAL));
    assert.ok(!paid.includes(LOCAL));
    assert.ok(paid.includes('anthropic/claude-sonnet-4'));
    assert.deepEqual(
      covered.filter((id) => paid.includes(id)),
      [],
    );
    const personal = await ids('/api/personalized/v1/models', { authorization: `Bearer ${key}` });
    assert.deepEqual([...personal].sort(), [...covered, ...paid].sort());
    const anon = await fetch(`${api.base}/api/personalized/v1/models`);
    assert.equal(anon.status, 401);
    const detailed = ((await (await fetch(`${api.base}/api/v1/models?detailed=true`)).json()) as any).data as any[];
    assert.equal(detailed.find((m) => m.id === LOCAL).subscription.included, true);
    assert.equal(detailed.find((m) => m.id === 'anthropic/claude-sonnet-4').subscription.included, false);
    assert.ok(detailed.every((m) => 'icon_url' in m));
  });

  it('/api/v1thinking turns reasoning on for a reasoning model, as :thinking does; other models answer as usual', async () => {
    const res = await post('/api/v1thinking/chat/completions', {
      model: SONNET,
      max_tokens: 4096,
      messages: [{ role: 'user', content: 'Ponder' }],
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(anthropic.last().body.thinking, { type: 'enabled', budget_tokens: 2048 });
    await post('/api/v1/chat/completions', {
      model: SONNET,
      max_tokens: 4096,
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(anthropic.last().body.thinking, undefined, 'not under /api/v1');
    // :reasoning-effort/none in the name still wins
    await post('/api/v1thinking/chat/completions', {
      model: `${SONNET}:reasoning-effort/none`,
      max_tokens: 4096,
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.notEqual(anthropic.last().body.thinking?.type, 'enabled');
    const local = await post('/api/v1thinking/chat/completions', {
      model: LOCAL,
      max_tokens: 4,
      messages: [{ role: 'user', content: 'Once' }],
    });
    assert.equal(local.status, 200);
    const models = await fetch(`${api.base}/api/v1thinking/models`);
    assert.equal(models.status, 200);
  });

  it('the local model on the message-style API reports the stop sequence that ended its answer', async () => {
    const claude = new Anthropic({ apiKey: key, baseURL: `${api.base}/api`, maxRetries: 0 });
    // the tiny story model writes "e" within a few tokens of any prompt
    const msg = await claude.messages.create({
      model: LOCAL,
      max_tokens: 64,
      stop_sequences: ['zzz', 'e'],
      messages: [{ role: 'user', content: 'Once upon a time' }],
    });
    assert.equal(msg.stop_reason, 'stop_sequence');
    assert.equal(msg.stop_sequence, 'e');
    const text = msg.content[0]!.type === 'text' ? msg.content[0]!.text : '';
    assert.ok(!text.includes('e'), 'the text stops before the stop sequence');
    // streamed too
    const stream = claude.messages.stream({
      model: LOCAL,
      max_tokens: 64,
      stop_sequences: ['e'],
      messages: [{ role: 'user', content: 'Once upon a time' }],
    });
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'stop_sequence');
    assert.equal(final.stop_sequence, 'e');
    // a natural end or the length is not a stop sequence
    const long = await claude.messages.create({
      model: LOCAL,
      max_tokens: 3,
      stop_sequences: ['qqqq'],
      messages: [{ role: 'user', content: 'Once upon a time' }],
    });
    assert.equal(long.stop_reason, 'max_tokens');
    assert.equal(long.stop_sequence, null);
  });
});
