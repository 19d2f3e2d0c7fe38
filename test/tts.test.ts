// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// POST /api/tts and GET /api/tts/status against the real Temporal dev server and worker: sync
// binary audio, JSON with a signed audioUrl, and 202 jobs run by the `speechJob` workflow
// (long text, and music, which is always asynchronous), each driven to every terminal state
// against loopback OpenAI / ElevenLabs servers and the built-in eSpeak engine (real audio);
// retries that never charge twice, a worker killed mid-job and replaced, concurrent jobs on a
// small balance; music on /api/v1/audio/speech, voice settings, the voices list and the model
// list's pricing units. The books balance after every test.
import assert from 'node:assert/strict';
import { startApi, newAccount } from './support/api.js';
import {
  startOpenAISpeechUpstream,
  startElevenLabsUpstream,
  fakeAudio,
  isMp3Start,
  speechEnv,
  type SpeechUpstream,
} from './support/upstreams/speech.js';
import { useTemporal } from './support/temporal.js';
import { startWorkerProcess } from './support/workerProcess.js';
import { assertBooksBalance } from './support/books.js';
import { balances } from '../activities/ledger/ledger.js';
import { MUSIC_PER_SECOND, perMillion, SPEECH_PER_MILLION_CHARS } from './support/prices.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { useProviderEnv } from './support/providerEnv.js';
import { until } from './support/wait.js';

const MUSIC = 'elevenlabs/music_v1';

/** What `units` (characters, or seconds of music) cost at the hand-copied catalog prices, in nano-USD. */
function priceOf(modelId: 'local/espeak' | typeof MUSIC, units: number): bigint {
  return modelId === MUSIC ? BigInt(units) * MUSIC_PER_SECOND : perMillion(units, SPEECH_PER_MILLION_CHARS[modelId]);
}

describe('POST /api/tts and speech jobs (Temporal workflow)', function () {
  this.timeout(120_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let openai: SpeechUpstream;
  let eleven: SpeechUpstream;
  let restoreEnv: () => Promise<void>;
  const savedMax = config.ttsSyncMaxChars;

  before(async () => {
    await useTemporal();
    openai = await startOpenAISpeechUpstream();
    eleven = await startElevenLabsUpstream();
    restoreEnv = await useProviderEnv(speechEnv(openai, eleven));
    api = await startApi();
  });
  after(async () => {
    await api.close();
    await openai.close();
    await eleven.close();
    config.ttsSyncMaxChars = savedMax;
    await restoreEnv();
  });
  afterEach(async () => {
    openai.script();
    eleven.script();
    config.ttsSyncMaxChars = savedMax;
    await assertBooksBalance();
  });

  const tts = (key: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${api.base}/api/tts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, ...headers },
      body: JSON.stringify(body),
    });
  const status = (key: string, runId: string, model?: string) =>
    fetch(
      `${api.base}/api/tts/status?runId=${encodeURIComponent(runId)}${model ? `&model=${encodeURIComponent(model)}` : ''}`,
      { headers: { 'x-api-key': key } },
    );
  const usd = async (accountId: string) => (await balances(accountId))!.USD;
  const finished = (key: string, runId: string, ms?: number) =>
    until(
      async () => (await status(key, runId)).json() as Promise<any>,
      (j) => j.status !== 'pending',
      ms,
    );
  const charges = async (accountId: string) =>
    (
      await db().pool.query(
        `SELECT amount, idempotency_key, request_id FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'`,
        [accountId],
      )
    ).rows;

  async function expectLegacyError(res: Response, httpStatus: number, code: string) {
    assert.equal(res.status, httpStatus, await res.clone().text());
    const j = (await res.json()) as any;
    assert.equal(j.code, code);
    assert.equal(j.status, httpStatus);
    assert.equal(typeof j.error, 'string');
    assert.equal(j.message, j.error);
    return j;
  }

  describe('synchronous answers', () => {
    it('200 binary audio (x-api-key): a real WAV from the local engine, billed characters × price', async () => {
      const { key, accountId } = await newAccount('1');
      const text = 'Switchyard speaks through the legacy route.';
      const res = await tts(key, { text, model: 'local/espeak', voice: 'alloy', response_format: 'wav' });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(res.headers.get('content-type'), 'audio/wav');
      const wav = Buffer.from(await res.arrayBuffer());
      assert.equal(wav.toString('ascii', 0, 4), 'RIFF');
      assert.equal(wav.toString('ascii', 8, 12), 'WAVE');
      assert.ok(wav.length > 24000, 'about a second of audio or more');
      const cost = priceOf('local/espeak', text.length);
      assert.ok(cost > 0n);
      assert.equal((await usd(accountId)).amount, 1_000_000_000n - cost);
      assert.equal(res.headers.get('x-characters'), String(text.length));
    });

    it('200 JSON {audioUrl} when the caller asks for JSON: the signed URL serves the mp3 without a key', async () => {
      const { key, accountId } = await newAccount('1');
      const text = 'A hosted copy, please.';
      const res = await fetch(`${api.base}/api/tts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, accept: 'application/json' },
        body: JSON.stringify({ text, model: 'espeak', voice: 'nova' }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      const j = (await res.json()) as any;
      assert.equal(j.model, 'local/espeak');
      assert.equal(j.contentType, 'audio/mpeg');
      assert.equal(j.paymentSource, 'USD');
      assert.equal(j.characters, text.length);
      const cost = priceOf('local/espeak', text.length);
      assert.equal(j.cost, Number(cost) / 1e9);
      assert.equal(j.remainingBalance, Number(1_000_000_000n - cost) / 1e9);
      assert.match(j.audioUrl, /\/api\/media\/file_[0-9a-f]+\?expires=\d+&signature=/);
      const expires = Number(new URL(j.audioUrl).searchParams.get('expires'));
      assert.ok(Math.abs(expires - (Date.now() / 1000 + 3600)) < 60, 'valid about an hour');
      const audio = await fetch(j.audioUrl);
      assert.equal(audio.status, 200);
      assert.equal(audio.headers.get('content-type'), 'audio/mpeg');
      const mp3 = Buffer.from(await audio.arrayBuffer());
      assert.ok(isMp3Start(mp3), `mp3 frame sync, got ${mp3.subarray(0, 4).toString('hex')}`);
      assert.ok(mp3.length > 1000);
      // a tampered signature is refused
      assert.equal((await fetch(j.audioUrl.replace(/signature=./, 'signature=x'))).status, 403);
      assert.equal((await usd(accountId)).amount, 1_000_000_000n - cost);
    });

    it('voice controls reach ElevenLabs as voice_settings; models without them ignore them', async () => {
      const { key } = await newAccount('1');
      const res = await tts(key, {
        text: 'Steady now.',
        model: 'eleven_multilingual_v2',
        voice: 'rachel',
        stability: 0.3,
        similarity_boost: 0.9,
        style: 0.1,
        speed: 2,
      });
      assert.equal(res.status, 200, await res.clone().text());
      assert.ok(isMp3Start(Buffer.from(await res.arrayBuffer())));
      assert.deepEqual(eleven.requests.at(-1)!.body, {
        text: 'Steady now.',
        model_id: 'eleven_multilingual_v2',
        voice_settings: { stability: 0.3, similarity_boost: 0.9, style: 0.1, speed: 1.2 },
      });
      const res2 = await tts(key, { text: 'Plain.', model: 'openai/tts-1', voice: 'alloy', stability: 0.3 });
      assert.equal(res2.status, 200);
      await res2.arrayBuffer();
      assert.deepEqual(openai.requests.at(-1)!.body, {
        model: 'tts-1',
        input: 'Plain.',
        voice: 'alloy',
        response_format: 'mp3',
      });
    });

    it('bad input: legacy envelope, spec codes, nothing charged, no provider called', async () => {
      const { key, accountId } = await newAccount('1');
      const before = openai.requests.length;
      await expectLegacyError(await tts(key, { model: 'openai/tts-1' }), 400, 'missing_required_parameter');
      await expectLegacyError(await tts(key, { text: 'hi' }), 400, 'missing_required_parameter');
      await expectLegacyError(
        await tts(key, { text: 'hi', model: 'openai/tts-1', voice: 'darth' }),
        400,
        'invalid_voice',
      );
      await expectLegacyError(
        await tts(key, { text: 'hi', model: 'openai/tts-1', response_format: 'ogg' }),
        400,
        'unsupported_format',
      );
      await expectLegacyError(await tts(key, { text: 'x'.repeat(4097), model: 'openai/tts-1' }), 400, 'input_too_long');
      await expectLegacyError(await tts(key, { text: 'hi', model: 'openai/gpt-4o-mini' }), 400, 'invalid_model');
      await expectLegacyError(await tts(key, { text: 'hi', model: 'no/such-model' }), 404, 'model_not_found');
      await expectLegacyError(
        await tts(key, { text: 'hi', model: 'openai/tts-1', stability: 2 }),
        400,
        'invalid_parameter_value',
      );
      await expectLegacyError(
        await tts(key, { text: 'a song', model: MUSIC, duration: 2 }),
        400,
        'invalid_parameter_value',
      );
      await expectLegacyError(
        await tts(key, { text: 'a song', model: MUSIC, duration: 301 }),
        400,
        'invalid_parameter_value',
      );
      await expectLegacyError(
        await tts('sk-nanogpt-00000000-0000-0000-0000-000000000000', { text: 'hi', model: 'openai/tts-1' }),
        401,
        'invalid_api_key',
      );
      await expectLegacyError(
        await fetch(`${api.base}/api/tts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        }),
        401,
        'missing_api_key',
      );
      assert.equal(openai.requests.length, before);
      assert.equal((await usd(accountId)).amount, 1_000_000_000n);
    });

    it('a sync provider failure is the provider error, charging nothing', async () => {
      const { key, accountId } = await newAccount('1');
      openai.script({ status: 500, message: 'boom' });
      const e = await expectLegacyError(await tts(key, { text: 'fail', model: 'openai/tts-1' }), 502, 'upstream_error');
      assert.match(e.message, /^openai failed \(a server error, HTTP 500\)\./);
      assert.doesNotMatch(e.message, /boom/);
      const b = await usd(accountId);
      assert.equal(b.amount, 1_000_000_000n);
      assert.equal(b.held, 0n);
    });
  });

  describe('asynchronous jobs (202 → status)', () => {
    it('long text → 202, the workflow makes real audio, status completed with a downloadable audioUrl, charged once', async () => {
      config.ttsSyncMaxChars = 40;
      const { key, accountId } = await newAccount('1');
      const text = 'This sentence is longer than the synchronous limit, so it becomes a job.';
      const res = await tts(key, { text, model: 'local/espeak', voice: 'echo', response_format: 'wav' });
      assert.equal(res.status, 202, await res.clone().text());
      const ticket = (await res.json()) as any;
      assert.match(ticket.runId, /^tts_[0-9a-f]{24}$/);
      assert.deepEqual(ticket, { runId: ticket.runId, model: 'local/espeak', status: 'pending' });
      const done = await finished(key, ticket.runId);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.equal(done.contentType, 'audio/wav');
      const cost = priceOf('local/espeak', text.length);
      assert.equal(done.cost, Number(cost) / 1e9);
      const wav = Buffer.from(await (await fetch(done.audioUrl)).arrayBuffer());
      assert.equal(wav.toString('ascii', 0, 4), 'RIFF');
      assert.equal(wav.toString('ascii', 8, 12), 'WAVE');
      assert.ok(wav.length > 48000, `two seconds of audio or more, got ${wav.length} bytes`);
      const b = await usd(accountId);
      assert.equal(b.amount, 1_000_000_000n - cost);
      assert.equal(b.held, 0n);
      const c = await charges(accountId);
      assert.equal(c.length, 1);
      assert.equal(c[0].request_id, ticket.runId);
      // the job row and the workflow, found by id and by the owner's search attribute
      const row = await db().prisma.mediaJob.findUnique({ where: { id: ticket.runId } });
      assert.equal(row!.kind, 'speech');
      assert.equal(row!.status, 'completed');
      assert.equal(row!.cost!.toString(), cost.toString());
      assert.ok(row!.completedAt);
      const t = await useTemporal();
      const desc = await t.client.workflow.getHandle(ticket.runId).describe();
      assert.equal(desc.type, 'speechJob');
      assert.deepEqual(desc.searchAttributes.SwitchyardAccountId, [accountId]);
      // each poll signs a fresh URL for the same file
      const again = (await (await status(key, ticket.runId, 'espeak')).json()) as any;
      assert.equal(again.status, 'completed');
      assert.equal(new URL(again.audioUrl).pathname, new URL(done.audioUrl).pathname);
    });

    it("status: 404 unknown or another account's (same message), 400 wrong model, 400 without runId", async () => {
      config.ttsSyncMaxChars = 10;
      const { key } = await newAccount('1');
      const other = await newAccount('1');
      const ticket = (await (
        await tts(key, { text: 'Long enough to be a job.', model: 'local/espeak' })
      ).json()) as any;
      const unknown = await status(key, 'tts_000000000000000000000000');
      const unknownMessage = ((await unknown.clone().json()) as any).message;
      await expectLegacyError(unknown, 404, 'not_found');
      const foreign = await status(other.key, ticket.runId);
      assert.equal(
        ((await foreign.clone().json()) as any).message,
        unknownMessage.replace('tts_000000000000000000000000', ticket.runId),
      );
      await expectLegacyError(foreign, 404, 'not_found');
      await expectLegacyError(await status(key, ticket.runId, 'openai/tts-1'), 400, 'invalid_parameter_value');
      await expectLegacyError(
        await fetch(`${api.base}/api/tts/status`, { headers: { 'x-api-key': key } }),
        400,
        'missing_required_parameter',
      );
      assert.equal((await finished(key, ticket.runId)).status, 'completed');
    });

    it('music is always a job: ElevenLabs Music gets the prompt and length, billed per second asked for', async () => {
      const { key, accountId } = await newAccount('2');
      const prompt = 'A calm lo-fi beat with warm piano';
      const res = await tts(key, { text: prompt, model: 'eleven_music', voice: 'ignored-for-music', duration: 45 });
      assert.equal(res.status, 202, await res.clone().text());
      const ticket = (await res.json()) as any;
      assert.equal(ticket.model, MUSIC);
      const done = await finished(key, ticket.runId);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.equal(done.seconds, 45);
      const r = eleven.requests.at(-1)!;
      assert.equal(r.path, '/v1/music');
      assert.equal(r.query.get('output_format'), 'mp3_44100_128');
      assert.equal(r.headers['xi-api-key'], eleven.apiKey);
      assert.deepEqual(r.body, { prompt, music_length_ms: 45000, model_id: 'music_v1' });
      const audio = Buffer.from(await (await fetch(done.audioUrl)).arrayBuffer());
      assert.deepEqual(audio, Buffer.concat(fakeAudio('mp3', 3)));
      const cost = priceOf(MUSIC, 45);
      assert.equal(cost, 630_000_000n); // $0.80/min + 5% = $0.84/min, 45 s = $0.63
      assert.equal((await usd(accountId)).amount, 2_000_000_000n - cost);
    });

    it('a provider refusing the job: status error, reservation released, nothing charged, not retried', async () => {
      const { key, accountId } = await newAccount('1');
      const before = eleven.requests.length;
      eleven.script({ status: 401, message: 'Invalid API key' });
      const ticket = (await (await tts(key, { text: 'drums', model: MUSIC, duration: 10 })).json()) as any;
      const done = await finished(key, ticket.runId);
      assert.equal(done.status, 'error');
      assert.match(done.error, /^elevenlabs refused the gateway's credentials/);
      assert.doesNotMatch(done.error, /Invalid API key/);
      assert.equal(eleven.requests.length - before, 1);
      const b = await usd(accountId);
      assert.equal(b.amount, 1_000_000_000n);
      assert.equal(b.held, 0n);
      assert.equal((await charges(accountId)).length, 0);
      assert.equal((await db().prisma.mediaJob.findUnique({ where: { id: ticket.runId } }))!.status, 'error');
    });

    it('a transient failure is retried by the workflow engine and charged once', async () => {
      const { key, accountId } = await newAccount('1');
      const before = eleven.requests.length;
      eleven.script({ status: 503, message: 'busy' }, { cutAfter: 1 }, {});
      const ticket = (await (await tts(key, { text: 'strings', model: MUSIC, duration: 20 })).json()) as any;
      const done = await finished(key, ticket.runId);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.equal(eleven.requests.length - before, 3);
      assert.equal((await usd(accountId)).amount, 1_000_000_000n - priceOf(MUSIC, 20));
      assert.equal((await charges(accountId)).length, 1);
    });

    it('when every attempt fails: status error after the retries, released, nothing charged', async () => {
      const { key, accountId } = await newAccount('1');
      const before = eleven.requests.length;
      eleven.script({ status: 500 }, { status: 502 }, { status: 500, message: 'still down' });
      const ticket = (await (await tts(key, { text: 'brass', model: MUSIC, duration: 20 })).json()) as any;
      const done = await finished(key, ticket.runId);
      assert.equal(done.status, 'error');
      assert.match(done.error, /elevenlabs failed \(a server error, HTTP 500\).*Nothing was charged/);
      assert.doesNotMatch(done.error, /still down/);
      assert.equal(eleven.requests.length - before, 3);
      const b = await usd(accountId);
      assert.equal(b.amount, 1_000_000_000n);
      assert.equal(b.held, 0n);
    });

    it('many concurrent jobs on a small balance: only what the balance covers is accepted, no overspend', async () => {
      const { key, accountId } = await newAccount('3');
      const each = priceOf(MUSIC, 45); // $0.63: four fit in $3, five do not
      const results = await Promise.all(
        Array.from({ length: 12 }, () => tts(key, { text: 'race', model: MUSIC, duration: 45 })),
      );
      const accepted = results.filter((r) => r.status === 202);
      const refused = results.filter((r) => r.status === 402);
      assert.equal(accepted.length, 4);
      assert.equal(refused.length, 8);
      for (const r of refused) assert.equal(((await r.json()) as any).code, 'insufficient_balance');
      const tickets = await Promise.all(accepted.map((r) => r.json() as Promise<any>));
      for (const t of tickets) assert.equal((await finished(key, t.runId)).status, 'completed');
      const b = await usd(accountId);
      assert.equal(b.amount, 3_000_000_000n - 4n * each);
      assert.equal(b.held, 0n);
      assert.equal((await charges(accountId)).length, 4);
      await assertBooksBalance(accountId);
    });

    it('a worker killed mid-job: another worker finishes it, charged exactly once', async function () {
      this.timeout(180_000);
      const t = await useTemporal();
      const queue = `tts-kill-${process.pid}`;
      const env = { TEMPORAL_ADDRESS: t.address, TEMPORAL_TASK_QUEUE: queue, DATABASE_URL: config.databaseUrl! };
      const savedQueue = config.taskQueue;
      const first = await startWorkerProcess(env);
      let second: Awaited<ReturnType<typeof startWorkerProcess>> | undefined;
      try {
        config.taskQueue = queue; // this test's jobs go to the worker processes only
        const { key, accountId } = await newAccount('1');
        const before = eleven.requests.length;
        eleven.script({ hang: true }, {});
        const ticket = (await (
          await tts(key, { text: 'a song that takes forever', model: MUSIC, duration: 30 })
        ).json()) as any;
        await until(
          async () => eleven.requests.length,
          (n) => n > before,
        );
        assert.equal(((await (await status(key, ticket.runId)).json()) as any).status, 'pending');
        assert.equal((await usd(accountId)).held, priceOf(MUSIC, 30));
        await first.kill();
        await until(
          async () => eleven.requests[before].aborted,
          (a) => a,
          5000,
        );
        assert.equal(eleven.requests[before].aborted, true, "the killed worker's upstream call died with it");
        second = await startWorkerProcess(env);
        const done = await finished(key, ticket.runId, 90_000);
        assert.equal(done.status, 'completed', JSON.stringify(done));
        assert.equal(eleven.requests.length - before, 2);
        const cost = priceOf(MUSIC, 30);
        const b = await usd(accountId);
        assert.equal(b.amount, 1_000_000_000n - cost);
        assert.equal(b.held, 0n);
        assert.equal((await charges(accountId)).length, 1);
        assert.ok((await (await fetch(done.audioUrl)).arrayBuffer()).byteLength > 0);
      } finally {
        config.taskQueue = savedQueue;
        await first.kill();
        await second?.kill();
      }
    });
  });

  describe('music and voices on the OpenAI-style routes', () => {
    it('/api/v1/audio/speech answers music synchronously (input = prompt, voice ignored)', async () => {
      const { key, accountId } = await newAccount('1');
      const res = await fetch(`${api.base}/api/v1/audio/speech`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: MUSIC, input: 'jazz trio', voice: 'whatever', duration: 12 }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(res.headers.get('content-type'), 'audio/mpeg');
      assert.equal(res.headers.get('x-seconds'), '12');
      assert.ok(isMp3Start(Buffer.from(await res.arrayBuffer())));
      assert.deepEqual(eleven.requests.at(-1)!.body, {
        prompt: 'jazz trio',
        music_length_ms: 12000,
        model_id: 'music_v1',
      });
      assert.equal((await usd(accountId)).amount, 1_000_000_000n - priceOf(MUSIC, 12));
    });

    it('GET /api/v1/audio/voices lists voices per model', async () => {
      const one = (await (await fetch(`${api.base}/api/v1/audio/voices?model=tts-1`)).json()) as any;
      assert.equal(one.data.length, 1);
      assert.equal(one.data[0].model, 'openai/tts-1');
      assert.ok(one.data[0].voices.includes('alloy'));
      assert.equal(one.data[0].custom_voice_ids, false);
      const all = (await (await fetch(`${api.base}/api/v1/audio/voices`)).json()) as any;
      const el = all.data.find((d: any) => d.model === 'elevenlabs/eleven_multilingual_v2');
      assert.equal(el.custom_voice_ids, true);
      assert.equal(el.voice_settings, true);
      assert.deepEqual(all.data.find((d: any) => d.model === MUSIC).voices, []);
      assert.equal((await fetch(`${api.base}/api/v1/audio/voices?model=openai/gpt-4o-mini`)).status, 404);
    });

    it('GET /api/v1/models?detailed=true prices speech per character and music per minute', async () => {
      const list = (await (await fetch(`${api.base}/api/v1/models?detailed=true`)).json()) as any;
      const tts1 = list.data.find((m: any) => m.id === 'openai/tts-1');
      assert.deepEqual(tts1.pricing, {
        input: 15.75,
        currency: 'USD',
        unit: 'per_million_characters',
        billed_by: 'character',
      });
      const music = list.data.find((m: any) => m.id === MUSIC);
      assert.deepEqual(music.pricing, { input: 0.84, currency: 'USD', unit: 'per_minute', billed_by: 'second' });
    });
  });
});
