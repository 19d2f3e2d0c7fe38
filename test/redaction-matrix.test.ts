// biome-ignore-all lint/suspicious/noExplicitAny: answers are wire JSON in several envelopes
// PII redaction never fails open, on any route: every route the app's router serves is classified
// here (the test reads the router and fails on a route it does not know), and every route that
// sends caller text anywhere is tried with every way of asking for redaction (the header, the
// model suffix, the key's default, the account's default). A route that applies it must deliver
// its text masked to the loopback upstreams and search provider (which record everything they
// receive) and restore the answer; a route that does not must refuse with a 400 saying why, with
// nothing sent, reserved, charged or half-written (no batch). A new route that sends text must be
// added to ROUTES, with a probe.
import assert from 'node:assert/strict';
import type Router from '@koa/router';
import { toFile } from 'openai';
import { createApp } from '../api/app.js';
import { createKey, setAccountRedaction } from '../activities/accounts/keys.js';
import { db } from '../activities/db.js';
import { type ChatBench, startChatBench } from './support/chatEnv.js';
import { assertBooksBalance } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';
import { useTemporal } from './support/temporal.js';
import { type AnthropicUpstream, startAnthropicUpstream } from './support/upstreams/anthropic.js';
import { type SearchUpstream, startSearchUpstream } from './support/upstreams/search.js';
import { toneWav } from './support/upstreams/transcription.js';
import { until } from './support/wait.js';
import { apiPost } from './support/api.js';

const MODEL = 'openai/gpt-4o-mini';
const CLAUDE = 'anthropic/claude-3-5-haiku';
/** Labelled personal values: none may reach an upstream where redaction was asked for. */
const PII = { email: 'sarah.connor@example.com', phone: '+1 415 555 0132' };
const TEXT = `Write to ${PII.email} or call ${PII.phone} about the Springfield invoice.`;
const PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

type Way = 'header' | 'suffix' | 'key default' | 'account default';
const WAYS: Way[] = ['header', 'suffix', 'key default', 'account default'];

/** How to send a route a request carrying TEXT; `model` gets the suffix (absent: the route names no model). */
interface Probe {
  model?: string;
  body?: (model: string) => unknown;
  form?: (model: string) => Promise<FormData>;
  /** applies: the text of the answer, which must have the values back (absent: the answer has no text) */
  answer?: (res: Response) => Promise<string>;
  /** before the way's request: what the probe needs (an uploaded file), given the key */
  setup?: (key: string) => Promise<Record<string, string>>;
}

/**
 * What a route does with redaction:
 * - applies: masks what it sends, restores the answer;
 * - refuses: sends caller text but not redacted, so a request that asks is refused (400);
 * - no-text: sends no caller text to any upstream (reads, account management, job status);
 * - public: no API key (nothing to default), and no caller text sent upstream.
 */
type Entry = ['applies' | 'refuses', Probe] | ['no-text' | 'public', string];

const chat = (model: string) => ({ model, messages: [{ role: 'user', content: TEXT }], max_tokens: 60 });
/** chat with everything else that carries text: a web search, a turn's name, a tool's description */
const chatOnline = (model: string) => ({
  ...chat(model.replace(MODEL, `${MODEL}:online`)),
  messages: [
    { role: 'system', name: PII.email, content: 'Be brief.' },
    { role: 'user', content: TEXT },
  ],
  tools: [{ type: 'function', function: { name: 'mail', description: `Mails ${PII.email}.`, parameters: {} } }],
});
const chatAnswer = async (res: Response) => (await res.json()).choices[0].message.content as string;
const messages = (model: string) => ({ model, max_tokens: 200, messages: [{ role: 'user', content: TEXT }] });
const messagesAnswer = async (res: Response) => (await res.json()).content[0].text as string;
const responses = (model: string) => ({ model, input: TEXT });
const completions = (model: string) => ({ model, prompt: TEXT, max_tokens: 200 });
const talk = (model: string) => ({ model: model.replace(MODEL, `${MODEL}:online`), prompt: TEXT });
const embeddings = (model: string) => ({ model, input: TEXT });
const moderations = (model: string) => ({ model, input: TEXT });
const decisions = (model: string) => ({ model, state: TEXT, questions: { review: { type: 'noul' } } });
const imageGen = (model: string) => ({ model, prompt: TEXT, n: 1 });
const imageEdit = (model: string) => ({ model, prompt: TEXT, image: PNG });
const legacyImage = (model: string) => ({ model, prompt: TEXT });
const speech = (model: string) => ({ model, input: TEXT, voice: 'alloy' });
const tts = (model: string) => ({ model, text: TEXT });
const video = (model: string) => ({ model, prompt: TEXT, duration: '5' });
const extend = () => ({ runId: 'run_matrix', index: 0, prompt: TEXT });
const memory = () => ({ messages: [{ role: 'user', content: TEXT }] });
const web = () => ({ query: TEXT });
const audio = async (model: string) => {
  const form = new FormData();
  form.append('file', await toFile(toneWav(1), 'speech.wav', { type: 'audio/wav' }).then((f) => new Blob([f])));
  form.append('model', model);
  form.append('prompt', TEXT);
  return form;
};
const inlineBatch = (model: string) => ({
  endpoint: '/v1/chat/completions',
  model,
  requests: [{ custom_id: 'a', body: { messages: [{ role: 'user', content: TEXT }], max_tokens: 40 } }],
});
const messageBatch = (model: string) => ({ requests: [{ custom_id: 'a', params: messages(model) }] });

const TEXT_ROUTES: Record<string, Probe> = {
  chat: { model: MODEL, body: chatOnline, answer: chatAnswer },
  messages: { model: CLAUDE, body: messages, answer: messagesAnswer },
  responses: { model: MODEL, body: responses, answer: async (r) => (await r.json()).output_text },
  completions: { model: MODEL, body: completions, answer: async (r) => (await r.json()).choices[0].text },
  talk: { model: MODEL, body: talk, answer: (r) => r.text() },
  countTokens: { model: CLAUDE, body: messages },
};

const REFUSED = {
  embeddings: { model: 'local/all-minilm-l6-v2', body: embeddings },
  moderations: { model: 'openai/omni-moderation-latest', body: moderations },
  decisions: { model: 'openai/gpt-4.1-mini-decisions', body: decisions },
  images: { model: 'openai/dall-e-3', body: imageGen },
  imageEdits: { model: 'openai/gpt-image-1', body: imageEdit },
  legacyImage: { model: 'openai/dall-e-3', body: legacyImage },
  speech: { model: 'local/espeak', body: speech },
  tts: { model: 'local/espeak', body: tts },
  video: { model: 'kling/v2.1-master-text-to-video', body: video },
  extend: { body: extend },
  memory: { body: memory },
  web: { body: web },
  audio: { model: 'openai/whisper-1', form: audio },
  inlineBatch: { model: MODEL, body: inlineBatch },
  fileBatch: {
    body: () => undefined,
    // a file of one chat row (the file row is the caller's own upload; the batch is what is refused)
    setup: async (key: string) => ({ input_file_id: await uploadBatchFile(key, MODEL) }),
  },
  messageBatch: { model: CLAUDE, body: messageBatch },
} satisfies Record<string, Probe>;

const ROUTES: Record<string, Entry> = {
  'GET /health': ['public', 'liveness'],
  'GET /api/v1/models': ['public', 'the catalog'],
  'GET /v1/models': ['public', 'the catalog'],
  'GET /api/subscription/v1/models': ['public', 'the catalog'],
  'GET /api/paid/v1/models': ['public', 'the catalog'],
  'GET /api/personalized/v1/models': ['no-text', 'the catalog as the key sees it'],
  'GET /api/v1/models/*id': ['public', 'the catalog'],
  'GET /v1/models/*id': ['public', 'the catalog'],
  'GET /api/v1/embedding-models': ['public', 'the catalog'],
  'GET /v1/embedding-models': ['public', 'the catalog'],
  'GET /api/models': ['public', 'the catalog'],
  'GET /api/models/:group': ['public', 'the catalog'],
  'GET /api/models/*canonicalId/providers': ['public', 'the catalog'],
  'ALL /api/check-balance': ['no-text', 'the balance'],
  'ALL /api/check-nano-balance': ['no-text', 'the balance'],
  'POST /api/v1/chat/completions': ['applies', TEXT_ROUTES.chat],
  'POST /v1/chat/completions': ['applies', TEXT_ROUTES.chat],
  'POST /api/subscription/v1/chat/completions': ['applies', TEXT_ROUTES.chat],
  'POST /api/v1/messages': ['applies', TEXT_ROUTES.messages],
  'POST /v1/messages': ['applies', TEXT_ROUTES.messages],
  'POST /api/v1/messages/count_tokens': ['applies', TEXT_ROUTES.countTokens],
  'POST /v1/messages/count_tokens': ['applies', TEXT_ROUTES.countTokens],
  'POST /api/v1/responses': ['applies', TEXT_ROUTES.responses],
  'POST /v1/responses': ['applies', TEXT_ROUTES.responses],
  'POST /api/v1/responses/:id/cancel': ['no-text', 'a stored response'],
  'POST /v1/responses/:id/cancel': ['no-text', 'a stored response'],
  'GET /api/v1/responses/:id': ['no-text', 'a stored response'],
  'GET /v1/responses/:id': ['no-text', 'a stored response'],
  'GET /api/v1/responses/:id/input_items': ['no-text', 'a stored response'],
  'GET /v1/responses/:id/input_items': ['no-text', 'a stored response'],
  'DELETE /api/v1/responses/:id': ['no-text', 'a stored response'],
  'DELETE /v1/responses/:id': ['no-text', 'a stored response'],
  'POST /api/v1/completions': ['applies', TEXT_ROUTES.completions],
  'POST /v1/completions': ['applies', TEXT_ROUTES.completions],
  'POST /api/talk-to-gpt': ['applies', TEXT_ROUTES.talk],
  'POST /api/talk-to-gemini': ['applies', TEXT_ROUTES.talk],
  'POST /api/v1/audio/speech': ['refuses', REFUSED.speech],
  'POST /v1/audio/speech': ['refuses', REFUSED.speech],
  'GET /api/v1/audio/voices': ['public', 'the voices'],
  'GET /v1/audio/voices': ['public', 'the voices'],
  'POST /api/v1/embeddings': ['refuses', REFUSED.embeddings],
  'POST /v1/embeddings': ['refuses', REFUSED.embeddings],
  'POST /api/v1/audio/transcriptions': ['refuses', REFUSED.audio],
  'POST /v1/audio/transcriptions': ['refuses', REFUSED.audio],
  'POST /api/v1/audio/translations': ['refuses', REFUSED.audio],
  'POST /v1/audio/translations': ['refuses', REFUSED.audio],
  'POST /api/v1/moderations': ['refuses', REFUSED.moderations],
  'POST /v1/moderations': ['refuses', REFUSED.moderations],
  'POST /api/v1/decisions': ['refuses', REFUSED.decisions],
  'POST /v1/decisions': ['refuses', REFUSED.decisions],
  'POST /api/v1/systemone': ['refuses', REFUSED.decisions],
  'POST /v1/systemone': ['refuses', REFUSED.decisions],
  'POST /api/v1/images': ['refuses', REFUSED.images],
  'POST /v1/images': ['refuses', REFUSED.images],
  'POST /api/v1/images/generations': ['refuses', REFUSED.images],
  'POST /v1/images/generations': ['refuses', REFUSED.images],
  'POST /api/v1/images/edits': ['refuses', REFUSED.imageEdits],
  'POST /v1/images/edits': ['refuses', REFUSED.imageEdits],
  'POST /api/v1/images/edit': ['refuses', REFUSED.imageEdits],
  'POST /v1/images/edit': ['refuses', REFUSED.imageEdits],
  'POST /api/generate-image': ['refuses', REFUSED.legacyImage],
  'GET /api/v1/images/models': ['public', 'the catalog'],
  'GET /v1/images/models': ['public', 'the catalog'],
  'GET /api/v1/images/models/*modelId/endpoints': ['public', 'the catalog'],
  'GET /v1/images/models/*modelId/endpoints': ['public', 'the catalog'],
  'GET /api/v1/image-models': ['public', 'the catalog'],
  'GET /v1/image-models': ['public', 'the catalog'],
  'POST /api/v1/memory': ['refuses', REFUSED.memory],
  'POST /v1/memory': ['refuses', REFUSED.memory],
  'POST /api/web': ['refuses', REFUSED.web],
  'POST /api/tts': ['refuses', REFUSED.tts],
  'GET /api/tts/status': ['no-text', 'a job status'],
  'GET /api/media/:id': ['public', 'a stored media file (its id is the capability)'],
  'POST /api/generate-video': ['refuses', REFUSED.video],
  'GET /api/video/status': ['no-text', 'a job status'],
  'GET /api/generate-video/status': ['no-text', 'a job status'],
  'GET /api/generate-video/recover': ['no-text', 'a job status'],
  'POST /api/generate-video/extend': ['refuses', REFUSED.extend],
  'GET /api/generate-video/content': ['no-text', 'a finished video'],
  'POST /api/generate-video/cancel': ['no-text', 'a job'],
  'POST /api/v1/files': ['no-text', 'an upload, stored and sent nowhere (a batch that reads it is checked)'],
  'POST /v1/files': ['no-text', 'an upload, stored and sent nowhere (a batch that reads it is checked)'],
  'GET /api/v1/files': ['no-text', 'stored files'],
  'GET /v1/files': ['no-text', 'stored files'],
  'GET /api/v1/files/:id': ['no-text', 'stored files'],
  'GET /v1/files/:id': ['no-text', 'stored files'],
  'GET /api/v1/files/:id/content': ['no-text', 'stored files'],
  'GET /v1/files/:id/content': ['no-text', 'stored files'],
  'DELETE /api/v1/files/:id': ['no-text', 'stored files'],
  'DELETE /v1/files/:id': ['no-text', 'stored files'],
  'POST /api/beta/batches': ['refuses', REFUSED.inlineBatch],
  'GET /api/beta/batches': ['no-text', 'batches'],
  'GET /api/beta/batches/:id': ['no-text', 'batches'],
  'POST /api/beta/batches/:id/cancel': ['no-text', 'batches'],
  'POST /api/v1/batches': ['refuses', REFUSED.fileBatch],
  'POST /v1/batches': ['refuses', REFUSED.fileBatch],
  'GET /api/v1/batches': ['no-text', 'batches'],
  'GET /v1/batches': ['no-text', 'batches'],
  'GET /api/v1/batches/:id': ['no-text', 'batches'],
  'GET /v1/batches/:id': ['no-text', 'batches'],
  'POST /api/v1/batches/:id/cancel': ['no-text', 'batches'],
  'POST /v1/batches/:id/cancel': ['no-text', 'batches'],
  'POST /api/v1/messages/batches': ['refuses', REFUSED.messageBatch],
  'POST /v1/messages/batches': ['refuses', REFUSED.messageBatch],
  'GET /api/v1/messages/batches': ['no-text', 'batches'],
  'GET /v1/messages/batches': ['no-text', 'batches'],
  'GET /api/v1/messages/batches/:id': ['no-text', 'batches'],
  'GET /v1/messages/batches/:id': ['no-text', 'batches'],
  'POST /api/v1/messages/batches/:id/cancel': ['no-text', 'batches'],
  'POST /v1/messages/batches/:id/cancel': ['no-text', 'batches'],
  'DELETE /api/v1/messages/batches/:id': ['no-text', 'batches'],
  'DELETE /v1/messages/batches/:id': ['no-text', 'batches'],
  'GET /api/v1/messages/batches/:id/results': ['no-text', 'batches'],
  'GET /v1/messages/batches/:id/results': ['no-text', 'batches'],
  'POST /api/auth/signup': ['public', 'sign-in (account management, no model or search upstream)'],
  'POST /api/auth/login': ['public', 'sign-in'],
  'POST /api/auth/email-code': ['public', 'sign-in'],
  'POST /api/auth/email-code/verify': ['public', 'sign-in'],
  'POST /api/auth/logout': ['public', 'sign-in'],
  'GET /api/auth/session': ['no-text', 'a session'],
  'GET /api/keys': ['no-text', 'key management'],
  'POST /api/keys': ['no-text', 'key management'],
  'DELETE /api/keys': ['no-text', 'key management'],
  'DELETE /api/keys/:id': ['no-text', 'key management'],
  'GET /api/teams/invitations/lookup': ['public', 'team management'],
  ...Object.fromEntries(
    [
      'POST /api/teams/invitations/accept',
      'POST /api/teams/join',
      'DELETE /api/teams/join',
      'GET /api/teams',
      'POST /api/teams',
      'GET /api/teams/:team',
      'PATCH /api/teams/:team',
      'DELETE /api/teams/:team',
      'GET /api/teams/:team/members',
      'PATCH /api/teams/:team/members',
      'DELETE /api/teams/:team/members',
      'GET /api/teams/:team/members/self',
      'PATCH /api/teams/:team/members/self',
      'POST /api/teams/:team/leave',
      'POST /api/teams/:team/owner',
      'GET /api/teams/:team/invitations',
      'POST /api/teams/:team/invitations',
      'PATCH /api/teams/:team/invitations',
      'GET /api/teams/:team/invite-link',
      'POST /api/teams/:team/invite-link',
      'POST /api/teams/:team/invite-link/email',
      'GET /api/teams/:team/join-requests',
      'PATCH /api/teams/:team/join-requests',
      'DELETE /api/teams/:team/join-requests',
      'GET /api/teams/:team/usage',
      'PATCH /api/teams/:team/settings',
      'GET /api/teams/:team/allowed-models',
      'PATCH /api/teams/:team/allowed-models',
    ].map((route): [string, Entry] => [route, ['no-text', 'team management']]),
  ),
  'GET /api/subscription/v1/plans': ['public', 'the plans'],
  'GET /api/subscription/v1/usage': ['no-text', 'a subscription'],
  'POST /api/subscription/v1/subscribe': ['no-text', 'a subscription'],
  'POST /api/subscription/v1/cancel': ['no-text', 'a subscription'],
  'POST /api/transaction/create/:ticker': ['no-text', 'a deposit'],
  'GET /api/transaction/limits/:ticker': ['no-text', 'a deposit'],
  'GET /api/transaction/status/:txId': ['no-text', 'a deposit'],
  'POST /api/transaction/webhook/btcpay': ['public', "the payment processor's signed webhook"],
  'POST /api/invitations/create': ['no-text', 'an invitation'],
  'POST /api/invitations/redeem': ['no-text', 'an invitation'],
  'POST /api/invitations/revoke': ['no-text', 'an invitation'],
  'GET /api/invitations': ['no-text', 'invitations'],
  'GET /api/invitations/lookup': ['public', 'an invitation'],
  'GET /api/v1/x402/endpoints': ['public', 'the x402 price list'],
  'GET /v1/x402/endpoints': ['public', 'the x402 price list'],
  'GET /api/x402/status/:id': ['public', 'an x402 payment'],
  'POST /api/x402/complete/:id': [
    'public',
    "an x402 payment: runs the quoted request through its text route's handler " +
      '(a :redaction suffix in the quoted body is applied there; the header is refused at the quote)',
  ],
  'GET /api/v1/billing/:requestId': ['no-text', 'a bill'],
  'GET /v1/billing/:requestId': ['no-text', 'a bill'],
  'GET /api/v1/tee/attestation': ['no-text', "an enclave's report (the nonce is not text sent to a model)"],
  'GET /v1/tee/attestation': ['no-text', "an enclave's report (the nonce is not text sent to a model)"],
  'GET /api/v1/tee/signature/:requestId': ['no-text', 'a stored signature'],
  'GET /v1/tee/signature/:requestId': ['no-text', 'a stored signature'],
};

/** The app's one router (the middleware @koa/router's routes() returns carries it). */
function appRouter(): Router {
  const found = createApp()
    .middleware.map((m) => (m as { router?: Router }).router)
    .find(Boolean);
  assert.ok(found, 'the app mounts a router');
  return found;
}

/** Every route of the router as `METHOD path` (`ALL` for a route that takes every method). */
function servedRoutes(): string[] {
  return appRouter().stack.flatMap((layer) => {
    const methods = layer.methods.filter((m) => m !== 'HEAD');
    if (methods.length === 0) return [];
    if (methods.length > 10) return [`ALL ${String(layer.path)}`];
    return methods.map((m) => `${m} ${String(layer.path)}`);
  });
}

let bench: ChatBench;
async function uploadBatchFile(key: string, model: string): Promise<string> {
  const form = new FormData();
  const line = { custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: chat(model) };
  form.append('purpose', 'batch');
  form.append('file', new Blob([`${JSON.stringify(line)}\n`]), 'rows.jsonl');
  const res = await fetch(`${bench.base}/v1/files`, { method: 'POST', headers: auth(key), body: form });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.id;
}
const auth = (key: string) => ({ authorization: `Bearer ${key}`, 'x-api-key': key });

/** The error's message, whatever the route's envelope. */
function messageOf(body: any): string {
  if (typeof body?.error === 'string') return `${body.error} ${body.message ?? ''}`;
  return String(body?.error?.message ?? body?.message ?? JSON.stringify(body));
}

describe('redaction matrix: every route, every way of asking', function () {
  this.timeout(600_000);
  let anthropic: AnthropicUpstream;
  let linkup: SearchUpstream;
  let restoreEnv: () => Promise<void>;
  /** every request the recording upstreams received, as text, from the mark `since()` gave on */
  const recorders = () => [bench.openai.requests, bench.openrouter.requests, anthropic.requests, linkup.requests];
  const since = () => recorders().map((list) => list.length);
  const received = (mark = recorders().map(() => 0)) =>
    recorders().flatMap((list, i) =>
      list.slice(mark[i]).map((r: any) => JSON.stringify({ path: r.path, query: String(r.query ?? ''), body: r.body })),
    );

  before(async () => {
    await useTemporal();
    anthropic = await startAnthropicUpstream();
    linkup = await startSearchUpstream('linkup', [
      { title: 'Springfield invoice', url: 'https://example.org/invoice', content: 'Springfield invoices.' },
    ]);
    bench = await startChatBench();
    restoreEnv = await useProviderEnv({
      ANTHROPIC_API_KEY: anthropic.apiKey,
      ANTHROPIC_BASE_URL: anthropic.url,
      LINKUP_API_KEY: linkup.apiKey,
      LINKUP_BASE_URL: linkup.url,
    });
  });
  after(async () => {
    await restoreEnv();
    await bench.close();
    await anthropic.close();
    await linkup.close();
  });
  afterEach(() => assertBooksBalance());

  it('knows every route the router serves, and every route it lists is served', () => {
    const served = servedRoutes();
    const unknown = served.filter((r) => !(r in ROUTES));
    assert.deepEqual(
      unknown,
      [],
      'routes with no redaction class: add them to ROUTES (with a probe if they send text)',
    );
    const gone = Object.keys(ROUTES).filter((r) => !served.includes(r));
    assert.deepEqual(gone, [], 'ROUTES lists routes the router no longer serves');
  });

  /** An account asking for redaction the given way: its key and the headers and model suffix to send. */
  async function asking(way: Way) {
    const account = await bench.account('10', way === 'key default' ? { redaction: 'always' } : {});
    let key = account.key;
    if (way === 'account default') {
      await setAccountRedaction(account.accountId, 'always');
      key = (await createKey(account.accountId)).key;
    }
    return {
      ...account,
      key,
      headers: way === 'header' ? { redaction: 'true' } : ({} as Record<string, string>),
      suffix: way === 'suffix' ? ':redaction' : '',
    };
  }

  async function send(route: string, probe: Probe, a: Awaited<ReturnType<typeof asking>>): Promise<Response> {
    const [method, pattern] = route.split(' ');
    const path = pattern.replace(':id', 'x');
    const model = `${probe.model ?? ''}${a.suffix}`;
    const extra = probe.setup ? await probe.setup(a.key) : {};
    const headers: Record<string, string> = { ...auth(a.key), ...a.headers };
    let body: BodyInit;
    if (probe.form) body = await probe.form(model);
    else {
      headers['content-type'] = 'application/json';
      const json = probe.body?.(model);
      body = JSON.stringify(
        extra.input_file_id
          ? { input_file_id: extra.input_file_id, endpoint: '/v1/chat/completions', completion_window: '24h' }
          : json,
      );
    }
    return fetch(`${bench.base}${path}`, { method, headers, body });
  }

  for (const way of WAYS) {
    it(`applied where offered, asked for by the ${way}: masked upstream, restored answer`, async () => {
      const a = await asking(way);
      for (const [route, entry] of Object.entries(ROUTES)) {
        if (entry[0] !== 'applies') continue;
        const probe = entry[1];
        const mark = since();
        const res = await send(route, probe, a);
        assert.equal(res.status, 200, `${route} (${way}): ${await res.clone().text()}`);
        const answer = probe.answer ? await probe.answer(res.clone()) : await res.clone().text();
        const sent = received(mark);
        assert.ok(sent.length > 0 || route.includes('count_tokens'), `${route}: something was sent upstream`);
        for (const text of sent)
          for (const [label, value] of Object.entries(PII))
            assert.ok(!text.includes(value), `${route} (${way}): the ${label} reached an upstream unmasked: ${text}`);
        if (probe.answer) assert.ok(answer.includes(PII.email), `${route} (${way}): not restored: ${answer}`);
        if (!route.includes('count_tokens')) assert.match(res.headers.get('x-redaction') ?? '', /^applied;/, route);
      }
    });

    it(`refused where not offered, asked for by the ${way}: 400 saying why, nothing sent, held or created`, async () => {
      const a = await asking(way);
      const balance = () => bench.usd(a.accountId);
      const batches = async () =>
        Number(
          (await db().pool.query('SELECT count(*) FROM batches WHERE account_id = $1', [a.accountId])).rows[0].count,
        );
      for (const [route, entry] of Object.entries(ROUTES)) {
        if (entry[0] !== 'refuses') continue;
        const probe = entry[1];
        if (way === 'suffix' && !probe.model) continue; // the route names no model: no suffix to send
        const before = { mark: since(), balance: await balance() };
        const res = await send(route, probe, a);
        const text = await res.text();
        let body: any;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        assert.equal(res.status, 400, `${route} (${way}): ${text}`);
        assert.match(messageOf(body), /redaction/i, `${route} (${way}): the refusal says why`);
        if (way === 'key default' || way === 'account default')
          assert.match(messageOf(body), /redaction: false/, `${route}: how to opt out`);
        assert.deepEqual(received(before.mark), [], `${route} (${way}): nothing was sent upstream`);
        assert.deepEqual(await balance(), before.balance, `${route} (${way}): nothing held or charged`);
      }
      assert.equal(await batches(), 0, 'no batch was created');
    });
  }

  it('a file-backed batch whose row asks by suffix never runs unmasked: refused or failed, nothing charged', async () => {
    const a = await bench.account('10');
    const fileId = await uploadBatchFile(a.key, `${MODEL}:redaction`);
    const mark = since();
    const res = await fetch(`${bench.base}/v1/batches`, {
      method: 'POST',
      headers: { ...auth(a.key), 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' }),
    });
    const batch = await res.json();
    if (res.status !== 400) {
      assert.equal(res.status, 200, JSON.stringify(batch));
      const ended = await until(
        async () => (await fetch(`${bench.base}/v1/batches/${batch.id}`, { headers: auth(a.key) })).json(),
        (b: any) => ['completed', 'failed', 'expired', 'cancelled'].includes(b.status),
        60_000,
        'the batch to end',
      );
      assert.equal(ended.status, 'failed', JSON.stringify(ended));
      assert.match(JSON.stringify(ended.errors), /redaction/i);
    }
    assert.deepEqual(received(mark), [], 'no row was sent upstream');
    assert.equal((await bench.usd(a.accountId)).amount, 10_000_000_000n, 'nothing charged');
  });

  it("a row's own model with a redaction suffix refuses the batch at creation (inline and message batches)", async () => {
    const a = await bench.account('10');
    const mark = since();
    const post = (path: string, body: unknown) => apiPost(bench.base, path, body, { headers: auth(a.key) });
    const inline = inlineBatch(MODEL);
    inline.requests.push({
      custom_id: 'b',
      body: { ...inline.requests[0].body, model: `${MODEL}:piiredacted` } as any,
    });
    const second = { custom_id: 'b', params: messages(`${CLAUDE}:redacted`) };
    for (const [path, body] of [
      ['/api/beta/batches', inline],
      ['/v1/messages/batches', { requests: [...messageBatch(CLAUDE).requests, second] }],
    ] as const) {
      const res = await post(path, body);
      const text = await res.text();
      assert.equal(res.status, 400, `${path}: ${text}`);
      assert.match(text, /asks for PII redaction, which batches do not offer/, path);
    }
    assert.deepEqual(received(mark), []);
    const batches = await db().pool.query('SELECT count(*) FROM batches WHERE account_id = $1', [a.accountId]);
    assert.equal(Number(batches.rows[0].count), 0);
    assert.equal((await bench.usd(a.accountId)).amount, 10_000_000_000n, 'nothing charged');
  });

  it('a falsy header overrides a default: the request is answered as it is', async () => {
    const a = await bench.account('10', { redaction: 'always' });
    const res = await fetch(`${bench.base}/v1/embeddings`, {
      method: 'POST',
      headers: { ...auth(a.key), 'content-type': 'application/json', redaction: 'false' },
      body: JSON.stringify(embeddings('local/all-minilm-l6-v2')),
    });
    assert.equal(res.status, 200, await res.clone().text());
  });
});
