// Headers asking for features this gateway does not offer yet on a route (input moderation outside
// chat completions: test/moderation.test.ts; PII redaction on the text routes, which apply it:
// test/redaction.test.ts; on every route: test/redaction-matrix.test.ts) are refused with a
// 400 before anything is reserved or sent upstream: a caller who asked for redaction must never have
// the request sent unredacted (fail-closed).
import assert from 'node:assert/strict';
import { useChatBench, type ChatBench } from './support/chatEnv.js';

const MODEL = 'openai/gpt-4o-mini';
const messages = [{ role: 'user', content: 'My SSN is 078-05-1120' }];
/** the routes that offer PII redaction come first: only `moderation` is refused there */
const OFFER_REDACTION = 4;
const ROUTES: Array<[path: string, body: Record<string, unknown>]> = [
  ['/v1/completions', { model: MODEL, prompt: 'My SSN is 078-05-1120' }],
  ['/api/v1/responses', { model: MODEL, input: 'My SSN is 078-05-1120' }],
  ['/api/v1/messages', { model: MODEL, max_tokens: 50, messages }],
  ['/api/talk-to-gpt', { model: MODEL, prompt: 'My SSN is 078-05-1120' }],
  ['/api/v1/messages/count_tokens', { model: MODEL, messages }],
  ['/api/v1/audio/speech', { model: 'local/espeak', input: 'My SSN is 078-05-1120', voice: 'alloy' }],
  ['/api/generate-video', { model: 'kling/v2.1-master-text-to-video', prompt: 'x', duration: '5' }],
];

/** The error's message, whatever the route's envelope. */
async function refusal(res: Response): Promise<string> {
  const body = await res.json();
  return typeof body.error === 'string' ? body.message : body.error.message;
}

describe('features not offered yet are refused, not ignored (redaction, moderation headers)', function () {
  this.timeout(60_000);
  const bench = useChatBench();
  let b: ChatBench;
  before(() => (b = bench()));

  it('400 on every generation route but chat completions for moderation, and where it is not offered for the redaction header and its aliases', async () => {
    const { key, accountId } = await b.account('1');
    const before = await b.usd(accountId);
    const upstreamCalls = b.openai.requests.length;
    const headers = ['redaction', 'Redacted', 'PIIREDACTION', 'piiredacted', 'moderation'];
    for (const [i, [path, body]] of ROUTES.entries()) {
      const header = i < OFFER_REDACTION ? 'moderation' : headers[i % headers.length];
      for (const value of ['true', '1', 'yes', 'omni-moderation-latest', '']) {
        const res = await b.post(key, body, { [header]: value }, path);
        assert.equal(res.status, 400, `${path} with ${header}: ${value}`);
        const message = await refusal(res);
        assert.match(message, new RegExp(`'${header.toLowerCase()}' header asks for`), message);
        assert.match(message, /does not offer yet on this route\. The request was refused rather than sent without it/);
      }
    }
    const embeddings = { model: 'local/all-minilm-l6-v2', input: 'My SSN is 078-05-1120' };
    const chat = await b.post(key, embeddings, { redaction: 'true' }, '/api/v1/embeddings');
    const { error } = await chat.json();
    assert.equal(error.code, 'invalid_parameter_value');
    assert.equal(error.param, 'redaction');
    assert.equal(b.openai.requests.length, upstreamCalls, 'nothing was sent upstream');
    assert.deepEqual(await b.usd(accountId), before, 'nothing was reserved or charged');
  });

  it('a value that turns the feature off sends the request as it is', async () => {
    const { key } = await b.account('1');
    for (const value of ['false', '0', 'no', 'OFF', 'never']) {
      const res = await b.post(key, { model: MODEL, messages }, { redaction: value, moderation: value });
      assert.equal(res.status, 200, `${value}: ${await res.clone().text()}`);
    }
  });
});
