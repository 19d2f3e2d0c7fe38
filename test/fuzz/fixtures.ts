// What the fuzzer's {{placeholders}} stand for: keys of a rich account (two), a poor one (no money),
// another account (its things are "foreign": 403/404 territory) and a revoked key; and things that
// exist, made through the API as a client makes them: stored and background responses, video jobs
// (one left running, one finished Midjourney-style job to extend, a spare to cancel), speech jobs
// and a signed media URL.
import { newAccount } from '../support/api.js';
import { until } from '../support/wait.js';
import { createKey, revokeKey } from '../../activities/accounts/keys.js';
import { holdFile } from '../../activities/files/holds.js';
import type { FalUpstream } from '../support/upstreams/fal.js';

async function post(origin: URL, key: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(new URL(path, origin), {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`fixture ${path} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

async function get(origin: URL, key: string, path: string) {
  const res = await fetch(new URL(path, origin), { headers: { authorization: `Bearer ${key}` } });
  return res.json();
}

/** Makes the accounts and things; returns placeholder name → value, and the accounts' ids. */
export async function makeFixtures(
  origin: URL,
  fal: FalUpstream,
): Promise<{ values: Map<string, string>; accounts: string[] }> {
  const rich = await newAccount('1000');
  const poor = await newAccount('0');
  const other = await newAccount('50');
  const revoked = await newAccount('10');
  await revokeKey(revoked.keyId);
  const rich2 = (await createKey(rich.accountId, { name: 'fuzz-2' })).key;
  const values = new Map<string, string>([
    ['key:rich', rich.key],
    ['key:rich2', rich2],
    ['key:poor', poor.key],
    ['key:other', other.key],
    ['key:revoked', revoked.key],
  ]);
  // the built-in model loads on first use (seconds): not a cost any fuzzed request should carry
  await post(origin, rich.key, '/v1/chat/completions', {
    model: 'local/stories260k',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 2,
  });
  const text = { model: 'openai/gpt-4o-mini', input: 'Once upon a time', max_output_tokens: 8 };
  values.set('ownResponse', (await post(origin, rich.key, '/v1/responses', text)).id);
  values.set('foreignResponse', (await post(origin, other.key, '/v1/responses', text)).id);
  values.set('bgResponse', (await post(origin, rich.key, '/v1/responses', { ...text, background: true })).id);

  // the finished Midjourney-style job first (the loopback fal answers submissions in the order they come)
  const mj = (
    await post(origin, rich.key, '/api/generate-video', {
      model: 'midjourney/video',
      prompt: 'waves',
      imageUrl: 'https://example.com/a.png',
    })
  ).runId;
  values.set('mjVideo', mj);
  await until(
    () => get(origin, rich.key, `/api/video/status?requestId=${mj}`),
    (j: any) => j?.data?.status === 'completed',
    30_000,
    'fixture: the Midjourney job to complete',
  );
  // then jobs that stay running until cancelled
  const video = { model: 'kling/v2.1-master-text-to-video', prompt: 'a lighthouse', duration: '5' };
  fal.script({ outcome: 'hang' }, { outcome: 'hang' }, { outcome: 'hang' });
  const submitted = fal.jobs.length;
  values.set('ownVideo', (await post(origin, rich.key, '/api/generate-video', video)).runId);
  values.set('spareVideo', (await post(origin, rich.key, '/api/generate-video', video)).runId);
  values.set('foreignVideo', (await post(origin, other.key, '/api/generate-video', video)).runId);
  await until(
    async () => fal.jobs.length,
    (n) => n >= submitted + 3,
    30_000,
    'fixture: the running jobs to reach fal',
  );

  const music = { model: 'elevenlabs/music_v1', text: 'a calm piano', duration: 3 };
  const ownSpeech = (await post(origin, rich.key, '/api/tts', music)).runId;
  values.set('ownSpeechJob', ownSpeech);
  values.set('foreignSpeechJob', (await post(origin, other.key, '/api/tts', music)).runId);
  const hosted = await post(
    origin,
    rich.key,
    '/api/tts',
    { model: 'local/espeak', text: 'hello' },
    { accept: 'application/json' },
  );
  const media = new URL(hosted.audioUrl);
  values.set('mediaId', media.pathname.split('/').pop()!);
  values.set('mediaQuery', media.search.slice(1));

  // batch input files: one of the rich account's (kept: a hold pins it, so fuzzed deletes meet 409), another's
  const uploadFile = async (key: string) => {
    const form = new FormData();
    form.append('purpose', 'batch');
    form.append(
      'file',
      new Blob(['{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}\n']),
      'b.jsonl',
    );
    const res = await fetch(new URL('/v1/files', origin), {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    if (res.status !== 200) throw new Error(`fixture upload answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  };
  values.set('ownFile', await uploadFile(rich.key));
  await holdFile(values.get('ownFile')!, rich.accountId, 'batch_fuzz_fixture');
  values.set('spareFile', await uploadFile(rich.key));
  values.set('foreignFile', await uploadFile(other.key));

  await until(
    () => get(origin, rich.key, `/api/tts/status?runId=${ownSpeech}`),
    (j: any) => j?.status !== 'pending',
    30_000,
    'fixture: the speech job to finish',
  );
  return { values, accounts: [rich.accountId, poor.accountId, other.accountId, revoked.accountId] };
}
