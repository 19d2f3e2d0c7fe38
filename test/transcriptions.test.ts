// Speech to text (POST /api/v1/audio/transcriptions, /translations) with the official `openai` SDK
// unchanged, against an OpenAI-protocol loopback upstream: every response format, translations,
// billing per second of audio (the upstream's measured length, else the gateway's own reading of
// the file), every refusal before anything is held, failures free, and a race of many requests
// against a balance that covers some of them.
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { newAccount, startApi } from './support/api.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';
import { startTranscriptionUpstream, type TranscriptionUpstream, toneWav } from './support/upstreams/transcription.js';
import { catalog } from '../activities/catalog/catalog.js';
import { parseAmount } from '../activities/core/money.js';
import { audioSeconds } from '../activities/media/audioDuration.js';

/** What `seconds` of audio cost on the model's first route: its per-second price, per whole second. */
const costOf = (model: string, seconds: number) => BigInt(seconds) * catalog().model(model)!.routes[0]!.price.input;

describe('transcriptions (POST /api/v1/audio/transcriptions, /translations)', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let up: TranscriptionUpstream;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    up = await startTranscriptionUpstream();
    restoreEnv = await useProviderEnv({ OPENAI_API_KEY: up.apiKey, OPENAI_BASE_URL: up.url }, ['OPENROUTER_API_KEY']);
    api = await startApi();
  });
  after(async () => {
    await api.close();
    await up.close();
    await restoreEnv();
  });
  afterEach(async () => {
    up.script();
    await assertBooksBalance();
  });

  const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${api.base}/v1`, maxRetries: 0 });
  const spent = async (accountId: string, start = '10') =>
    parseAmount(start, 'USD') - (await settledBalances(accountId)).USD.amount;
  const wav = (seconds: number) => toFile(toneWav(seconds), 'speech.wav', { type: 'audio/wav' });

  it('the SDK transcribes with whisper: the text, the seconds billed (the upstream measured them), charged once', async () => {
    const { key, accountId } = await newAccount();
    up.script({ text: 'the quick brown fox' });
    const r: any = await sdk(key).audio.transcriptions.create({
      file: await wav(2.4),
      model: 'whisper-1',
      language: 'en',
    });
    assert.equal(r.text, 'the quick brown fox');
    assert.deepEqual(r.usage, { type: 'duration', seconds: 3 });
    const last = up.requests.at(-1)!;
    assert.equal(last.path, '/audio/transcriptions');
    assert.equal(last.fields.model, 'whisper-1');
    assert.equal(last.fields.response_format, 'verbose_json', 'asked for the length');
    assert.equal(last.fields.language, 'en');
    assert.deepEqual(last.file!.data, toneWav(2.4), 'the audio as sent');
    const cost = costOf('openai/whisper-1', 3);
    assert.equal(await spent(accountId), cost);
    assert.equal(BigInt(Math.round(r.cost * 1e9)), cost);
  });

  it('every response format: text, verbose_json, srt and vtt from the segments', async () => {
    const { key } = await newAccount();
    const client = sdk(key);
    up.script({ text: 'one two three four' });
    const text = await client.audio.transcriptions.create({
      file: await wav(4),
      model: 'whisper-1',
      response_format: 'text',
    });
    assert.equal(text, 'one two three four');
    up.script({ text: 'one two three four' });
    const verbose: any = await client.audio.transcriptions.create({
      file: await wav(4),
      model: 'whisper-1',
      response_format: 'verbose_json',
      timestamp_granularities: ['segment'],
    });
    assert.equal(verbose.duration, 4);
    assert.equal(verbose.task, 'transcribe');
    assert.deepEqual(
      verbose.segments.map((s: any) => [s.id, s.start, s.end, s.text]),
      [
        [0, 0, 2, ' one two'],
        [1, 2, 4, ' three four'],
      ],
    );
    up.script({ text: 'one two three four' });
    const srt = await client.audio.transcriptions.create({
      file: await wav(4),
      model: 'whisper-1',
      response_format: 'srt',
    });
    assert.equal(srt, '1\n00:00:00,000 --> 00:00:02,000\none two\n\n2\n00:00:02,000 --> 00:00:04,000\nthree four\n');
    up.script({ text: 'one two three four' });
    const vtt = await client.audio.transcriptions.create({
      file: await wav(4),
      model: 'whisper-1',
      response_format: 'vtt',
    });
    assert.equal(
      vtt,
      'WEBVTT\n\n00:00:00.000 --> 00:00:02.000\none two\n\n00:00:02.000 --> 00:00:04.000\nthree four\n',
    );
  });

  it('translations go to the translations endpoint and answer in English', async () => {
    const { key, accountId } = await newAccount();
    up.script({ text: 'good morning' });
    const r: any = await sdk(key).audio.translations.create({ file: await wav(1.5), model: 'whisper-1' });
    assert.equal(r.text, 'good morning');
    assert.equal(up.requests.at(-1)!.path, '/audio/translations');
    assert.equal(await spent(accountId), costOf('openai/whisper-1', 2));
    // a model that does not translate says so, before anything is held
    const res = await fetch(`${api.base}/v1/audio/translations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form({ model: 'gpt-4o-mini-transcribe' }, toneWav(1)),
    });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as any).error.message, /does not serve \/v1\/audio\/translations/);
  });

  it('a model whose upstream states no length: the gateway measures WAV and MP3 itself, and refuses what it cannot measure', async () => {
    const { key, accountId } = await newAccount();
    const r: any = await sdk(key).audio.transcriptions.create({
      file: await wav(3.2),
      model: 'gpt-4o-mini-transcribe',
    });
    assert.equal(r.text, 'hello from the loopback');
    assert.equal(up.requests.at(-1)!.fields.response_format, 'json');
    assert.deepEqual(r.usage, { type: 'duration', seconds: 4 });
    assert.equal(await spent(accountId), costOf('openai/gpt-4o-mini-transcribe', 4));
    const asked = up.requests.length;
    await assert.rejects(
      sdk(key).audio.transcriptions.create({
        file: await toFile(Buffer.from('OggS not really an ogg'), 'voice.ogg', { type: 'audio/ogg' }),
        model: 'gpt-4o-mini-transcribe',
      }),
      (e: any) => e.status === 400 && e.error?.code === 'unsupported_audio_format',
    );
    await assert.rejects(
      sdk(key).audio.transcriptions.create({
        file: await wav(1),
        model: 'gpt-4o-mini-transcribe',
        response_format: 'srt',
      }),
      (e: any) => e.status === 400 && e.error?.param === 'response_format',
    );
    assert.equal(up.requests.length, asked, 'neither reached the upstream');
  });

  it('reads the length of WAV and MP3 files', () => {
    assert.equal(audioSeconds(toneWav(2.5)), 2.5);
    // MPEG-1 layer III, 128 kbit/s, 44.1 kHz: 417-byte frames (418 with padding), 1152 samples each
    const frame = (pad: number) => {
      const f = Buffer.alloc(417 + pad);
      f.writeUInt32BE((0xfffb9000 | (pad << 9)) >>> 0, 0);
      return f;
    };
    const mp3 = Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'), frame(0), frame(1), frame(0)]);
    assert.equal(audioSeconds(mp3), (3 * 1152) / 44100);
    assert.equal(audioSeconds(Buffer.from('not audio')), undefined);
  });

  it('refuses bad forms with the field named, holding nothing', async () => {
    const { key, accountId } = await newAccount();
    const post = (body: BodyInit, headers: Record<string, string> = {}) =>
      fetch(`${api.base}/api/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, ...headers },
        body,
      });
    const expect = async (res: Response, status: number, code: string, param: string | null) => {
      const j = (await res.json()) as any;
      assert.equal(res.status, status, JSON.stringify(j));
      assert.equal(j.error.code, code, JSON.stringify(j));
      assert.equal(j.error.param, param, JSON.stringify(j));
    };
    const asked = up.requests.length;
    await expect(await post(form({ model: 'whisper-1' })), 400, 'missing_required_parameter', 'file');
    await expect(await post(form({}, toneWav(1))), 400, 'missing_required_parameter', 'model');
    await expect(
      await post(form({ model: 'whisper-1', response_format: 'mp3' }, toneWav(1))),
      400,
      'invalid_parameter_value',
      'response_format',
    );
    await expect(
      await post(form({ model: 'whisper-1', temperature: '2' }, toneWav(1))),
      400,
      'invalid_parameter_value',
      'temperature',
    );
    await expect(
      await post(form({ model: 'whisper-1', language: 'english!' }, toneWav(1))),
      400,
      'invalid_parameter_value',
      'language',
    );
    await expect(await post(form({ model: 'no/such-model' }, toneWav(1))), 404, 'model_not_found', 'model');
    await expect(await post(form({ model: 'local/stories260k' }, toneWav(1))), 400, 'invalid_parameter_value', 'model');
    await expect(
      await post(JSON.stringify({ model: 'whisper-1' }), { 'content-type': 'application/json' }),
      400,
      'invalid_content_type',
      'file',
    );
    await expect(
      await post(form({ model: 'whisper-1' }, Buffer.alloc(25 * 1024 * 1024 + 1))),
      413,
      'request_too_large',
      'file',
    );
    const anon = await fetch(`${api.base}/api/v1/audio/transcriptions`, {
      method: 'POST',
      body: form({ model: 'whisper-1' }, toneWav(1)),
    });
    assert.equal(anon.status, 401);
    assert.equal(up.requests.length, asked, 'nothing reached the upstream');
    assert.equal(await spent(accountId), 0n);
    const { rows } = await (await import('../activities/db.js'))
      .db()
      .pool.query(`SELECT held FROM balances WHERE account_id = $1 AND currency = 'USD'`, [accountId]);
    assert.equal(rows[0].held, '0', 'nothing held');
  });

  it('an upstream failure costs nothing; an answer without the length it promised is a failure too', async () => {
    const { key, accountId } = await newAccount();
    up.script({ status: 500 });
    await assert.rejects(
      sdk(key).audio.transcriptions.create({ file: await wav(1), model: 'whisper-1' }),
      (e: any) => e.status >= 500,
    );
    up.script({ status: 429 });
    await assert.rejects(
      sdk(key).audio.transcriptions.create({ file: await wav(1), model: 'whisper-1' }),
      (e: any) => e.status === 429,
    );
    up.script({ noDuration: true });
    // whisper's length is missing: the gateway measured the WAV itself, so it still bills exactly
    const r: any = await sdk(key).audio.transcriptions.create({ file: await wav(1.2), model: 'whisper-1' });
    assert.deepEqual(r.usage, { type: 'duration', seconds: 2 });
    assert.equal(await spent(accountId), costOf('openai/whisper-1', 2));
  });

  it('many at once against a balance that covers some: each charged once or refused, never below zero', async () => {
    const price = costOf('openai/whisper-1', 10);
    // room for 3 ten-second transcriptions and a bit
    const usd = (Number(price * 3n + price / 2n) / 1e9).toFixed(9);
    const { key, accountId } = await newAccount(usd);
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, async () =>
        sdk(key).audio.transcriptions.create({ file: await wav(10), model: 'whisper-1' }),
      ),
    );
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    for (const r of results) if (r.status === 'rejected') assert.equal((r.reason as any).status, 402);
    assert.equal(ok, 3);
    assert.equal(await spent(accountId, usd), price * 3n);
  });
});

/** A multipart form as the SDK sends it: the fields, and `file` when given. */
function form(fields: Record<string, string>, file?: Buffer): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.append(k, v);
  if (file) f.append('file', new Blob([new Uint8Array(file)], { type: 'audio/wav' }), 'speech.wav');
  return f;
}
