// Text to speech, synchronously (POST /api/v1/audio/speech): the built-in engine (eSpeak NG in
// WebAssembly) makes real, audible WAV / mp3 / pcm with no key; the OpenAI speech API and
// ElevenLabs text-to-speech through loopback servers speaking their real protocols; plain and
// streaming (chunked, no Content-Length); billed per input character, nothing for failures;
// each speech error code; the books balance after every money test.
import assert from 'node:assert/strict';
import { startApi, newAccount, apiPost } from './support/api.js';
import {
  startOpenAISpeechUpstream,
  startElevenLabsUpstream,
  fakeAudio,
  isMp3Start,
  speechEnv,
  type SpeechUpstream,
} from './support/upstreams/speech.js';
import { loadCatalog } from '../activities/catalog/catalog.js';
import { balances } from '../activities/ledger/ledger.js';
import { perMillion, SPEECH_PER_MILLION_CHARS } from './support/prices.js';
import { assertBooksBalance } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';

const ENV = ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ELEVENLABS_API_KEY', 'ELEVENLABS_BASE_URL', 'OPENROUTER_API_KEY'];

/** What `chars` characters cost, at the hand-copied catalog price (test/support/prices.ts), in nano-USD. */
function priceOf(modelId: keyof typeof SPEECH_PER_MILLION_CHARS, chars: number): bigint {
  return perMillion(chars, SPEECH_PER_MILLION_CHARS[modelId]);
}

function peak(samples: Int16Array): number {
  let max = 0;
  for (const s of samples) max = Math.max(max, Math.abs(s));
  return max;
}

describe('audio speech (POST /api/v1/audio/speech)', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let openai: SpeechUpstream;
  let eleven: SpeechUpstream;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    openai = await startOpenAISpeechUpstream();
    eleven = await startElevenLabsUpstream();
    restoreEnv = await useProviderEnv(speechEnv(openai, eleven), ENV);
    api = await startApi();
  });
  after(async () => {
    await api.close();
    await openai.close();
    await eleven.close();
    await restoreEnv();
  });
  afterEach(async () => {
    openai.script();
    eleven.script();
    await assertBooksBalance();
  });

  const post = (key: string, body: unknown, path = '/api/v1/audio/speech') => apiPost(api.base, path, body, { key });
  const usd = async (accountId: string) => (await balances(accountId))!.USD;

  async function expectError(res: Response, status: number, code: string, param?: string) {
    assert.equal(res.status, status, await res.clone().text());
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    const j = (await res.json()) as { error: { code: string; message: string; param: string | null; type: string } };
    assert.equal(j.error.code, code);
    if (param !== undefined) assert.equal(j.error.param, param);
    return j.error;
  }

  describe('the built-in local engine (no key)', () => {
    it('turns text into a real WAV, billed exactly characters × price', async () => {
      const { key, accountId } = await newAccount('1');
      const input = 'Hello from Switchyard. This is real speech.';
      const res = await post(key, { model: 'local/espeak', input, voice: 'alloy', response_format: 'wav' });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(res.headers.get('content-type'), 'audio/wav');
      const wav = Buffer.from(await res.arrayBuffer());
      assert.equal(res.headers.get('content-length'), String(wav.length));
      assert.equal(wav.toString('ascii', 0, 4), 'RIFF');
      assert.equal(wav.toString('ascii', 8, 12), 'WAVE');
      assert.equal(wav.readUInt16LE(20), 1); // PCM
      assert.equal(wav.readUInt16LE(22), 1); // mono
      assert.equal(wav.readUInt32LE(24), 24000);
      assert.equal(wav.readUInt16LE(34), 16);
      assert.equal(wav.toString('ascii', 36, 40), 'data');
      assert.equal(wav.readUInt32LE(40), wav.length - 44);
      const samples = new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + wav.length));
      assert.ok(samples.length / 24000 > 1, `about two seconds of speech, got ${samples.length / 24000}s`);
      assert.ok(peak(samples) > 2000, `audible, peak ${peak(samples)}`);
      const after = await usd(accountId);
      const cost = priceOf('local/espeak', input.length);
      assert.ok(cost > 0n);
      assert.equal(after.amount, 1_000_000_000n - cost);
      assert.equal(after.held, 0n);
      assert.equal(res.headers.get('x-characters'), String(input.length));
      assert.equal(res.headers.get('x-payment-source'), 'USD');
    });

    it('a fresh account gets an audible mp3 by default (mp3, first voice), also under /v1', async () => {
      const { key, accountId } = await newAccount('1');
      const input = 'Héllo wörld';
      const res = await post(key, { model: 'espeak', input }, '/v1/audio/speech');
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(res.headers.get('content-type'), 'audio/mpeg');
      const mp3 = Buffer.from(await res.arrayBuffer());
      assert.ok(mp3.length > 1000);
      assert.ok(isMp3Start(mp3), `mp3 frame sync, got ${mp3.subarray(0, 4).toString('hex')}`);
      // more frames follow at frame boundaries: count the syncs
      let syncs = 0;
      for (let i = 0; i + 1 < mp3.length; i++) if (mp3[i] === 0xff && (mp3[i + 1] & 0xe0) === 0xe0) syncs++;
      assert.ok(syncs > 10, `${syncs} frame syncs`);
      assert.equal((await usd(accountId)).amount, 1_000_000_000n - priceOf('local/espeak', [...input].length));
    });

    it('pcm is raw 16-bit little-endian at 24 kHz and speed changes the duration', async () => {
      const { key } = await newAccount('1');
      const input = 'One two three four five six seven.';
      const slow = Buffer.from(
        await (
          await post(key, { model: 'local/espeak', input, voice: 'en-gb', response_format: 'pcm', speed: 0.75 })
        ).arrayBuffer(),
      );
      const fast = Buffer.from(
        await (
          await post(key, { model: 'local/espeak', input, voice: 'en-gb', response_format: 'pcm', speed: 2 })
        ).arrayBuffer(),
      );
      assert.equal(slow.length % 2, 0);
      assert.ok(peak(new Int16Array(slow.buffer.slice(slow.byteOffset, slow.byteOffset + slow.length))) > 2000);
      assert.ok(slow.length > fast.length * 1.5, `slow ${slow.length} vs fast ${fast.length}`);
    });

    it('streams with chunked transfer and no Content-Length', async () => {
      const { key, accountId } = await newAccount('1');
      const input = 'Streaming speech from the local engine.';
      const res = await post(key, { model: 'local/espeak', input, voice: 'nova', stream: true });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-length'), null);
      assert.equal(res.headers.get('transfer-encoding'), 'chunked');
      const mp3 = Buffer.from(await res.arrayBuffer());
      assert.ok(isMp3Start(mp3));
      assert.equal((await usd(accountId)).amount, 1_000_000_000n - priceOf('local/espeak', input.length));
    });

    it('synthesis runs off the event loop: the API keeps answering meanwhile', async () => {
      const { key } = await newAccount('1');
      const long = post(key, {
        model: 'local/espeak',
        input: 'Numbers and words, spoken slowly. '.repeat(60),
        voice: 'alloy',
        response_format: 'wav',
      });
      await new Promise((r) => setTimeout(r, 300)); // a fixed time on purpose: the synthesis is under way
      const t0 = Date.now();
      assert.equal((await fetch(`${api.base}/health`)).status, 200);
      assert.ok(Date.now() - t0 < 250, `health took ${Date.now() - t0} ms`);
      const res = await long;
      assert.equal(res.status, 200);
      assert.ok((await res.arrayBuffer()).byteLength > 24000 * 2 * 30, 'half a minute of audio or more');
    });

    it('refuses formats it cannot make (unsupported_format, naming what it can), charging nothing', async () => {
      const { key, accountId } = await newAccount('1');
      for (const f of ['opus', 'aac', 'flac', 'ogg']) {
        const e = await expectError(
          await post(key, { model: 'local/espeak', input: 'hi', voice: 'alloy', response_format: f }),
          400,
          'unsupported_format',
          'response_format',
        );
        assert.match(e.message, /mp3, wav, pcm/);
      }
      assert.equal((await usd(accountId)).amount, 1_000_000_000n);
    });
  });

  describe('request errors', () => {
    it('invalid_model, model_not_found, invalid_voice, input_too_long, bad parameters: 400s, nothing charged', async () => {
      const { key, accountId } = await newAccount('1');
      await expectError(
        await post(key, { model: 'local/stories260k', input: 'hi', voice: 'alloy' }),
        400,
        'invalid_model',
        'model',
      );
      await expectError(
        await post(key, { model: 'no/such-tts', input: 'hi', voice: 'alloy' }),
        404,
        'model_not_found',
        'model',
      );
      await expectError(
        await post(key, { model: 'local/espeak', input: 'hi', voice: 'darth' }),
        400,
        'invalid_voice',
        'voice',
      );
      await expectError(
        await post(key, { model: 'openai/tts-1', input: 'hi', voice: 'rachel' }),
        400,
        'invalid_voice',
        'voice',
      );
      await expectError(
        await post(key, { model: 'local/espeak', input: 'a'.repeat(10_001), voice: 'alloy' }),
        400,
        'input_too_long',
        'input',
      );
      const e = await expectError(
        await post(key, { model: 'openai/tts-1', input: 'é'.repeat(4097), voice: 'alloy' }),
        400,
        'input_too_long',
        'input',
      );
      assert.match(e.message, /4097 characters.*at most 4096/);
      await expectError(
        await post(key, { model: 'local/espeak', voice: 'alloy' }),
        400,
        'missing_required_parameter',
        'input',
      );
      await expectError(
        await post(key, { model: 'local/espeak', input: '', voice: 'alloy' }),
        400,
        'invalid_parameter_value',
        'input',
      );
      await expectError(
        await post(key, { model: 'local/espeak', input: 'hi', voice: 'alloy', speed: 9 }),
        400,
        'invalid_parameter_value',
        'speed',
      );
      await expectError(
        await post(key, { model: 'local/espeak', input: 'hi', voice: 'alloy', stream: 'yes' }),
        400,
        'invalid_parameter_value',
        'stream',
      );
      const noAuth = await fetch(`${api.base}/api/v1/audio/speech`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(noAuth.status, 401);
      assert.equal(openai.requests.length, 0);
      assert.equal((await usd(accountId)).amount, 1_000_000_000n);
    });

    it('too little money is a 402 before any provider is called', async () => {
      const { key } = await newAccount('0.00001');
      const before = openai.requests.length;
      await expectError(
        await post(key, { model: 'openai/tts-1', input: 'x'.repeat(4000), voice: 'alloy' }),
        402,
        'insufficient_balance',
      );
      assert.equal(openai.requests.length, before);
    });
  });

  describe('OpenAI speech API (loopback)', () => {
    it('passes the request through and answers the audio, billed per character', async () => {
      const { key, accountId } = await newAccount('1');
      const input = 'The quick brown fox.';
      const res = await post(key, {
        model: 'tts-1',
        input,
        voice: 'onyx',
        response_format: 'flac',
        speed: 1.25,
        instructions: 'ignored by tts-1',
      });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(res.headers.get('content-type'), 'audio/flac');
      const audio = Buffer.from(await res.arrayBuffer());
      assert.deepEqual(audio, Buffer.concat(fakeAudio('flac', 3)));
      const r = openai.requests.at(-1)!;
      assert.equal(r.path, '/v1/audio/speech');
      assert.equal(r.headers.authorization, `Bearer ${openai.apiKey}`);
      assert.deepEqual(r.body, { model: 'tts-1', input, voice: 'onyx', response_format: 'flac', speed: 1.25 });
      const cost = priceOf('openai/tts-1', input.length);
      assert.equal((await usd(accountId)).amount, 1_000_000_000n - cost);
      assert.equal(Number(res.headers.get('x-cost')), Number(cost) / 1e9);
    });

    it('gpt-4o-mini-tts gets the instructions', async () => {
      const { key } = await newAccount('1');
      const res = await post(key, {
        model: 'openai/gpt-4o-mini-tts',
        input: 'Hi!',
        voice: 'coral',
        instructions: 'Speak cheerfully.',
      });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      assert.deepEqual(openai.requests.at(-1)!.body, {
        model: 'gpt-4o-mini-tts',
        input: 'Hi!',
        voice: 'coral',
        response_format: 'mp3',
        instructions: 'Speak cheerfully.',
      });
    });

    it('streams chunked without Content-Length, billed once audio arrived', async () => {
      const { key, accountId } = await newAccount('1');
      openai.script({ chunks: 5 });
      const res = await post(key, {
        model: 'openai/tts-1',
        input: 'Stream me.',
        voice: 'alloy',
        response_format: 'pcm',
        stream: true,
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-length'), null);
      assert.equal(res.headers.get('transfer-encoding'), 'chunked');
      assert.equal(res.headers.get('content-type'), 'audio/pcm');
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), Buffer.concat(fakeAudio('pcm', 5)));
      assert.equal((await usd(accountId)).amount, 1_000_000_000n - priceOf('openai/tts-1', 'Stream me.'.length));
    });

    it('a provider failing before any audio costs nothing (plain and streaming)', async () => {
      const { key, accountId } = await newAccount('1');
      openai.script({ status: 500, message: 'boom' });
      let e = await expectError(
        await post(key, { model: 'openai/tts-1', input: 'fail', voice: 'alloy' }),
        502,
        'upstream_error',
      );
      // the provider and the kind of failure; the upstream's own words stay in the operator's log
      assert.match(e.message, /^openai failed \(a server error, HTTP 500\)\./);
      assert.doesNotMatch(e.message, /boom/);
      openai.script({ status: 500 });
      await expectError(
        await post(key, { model: 'openai/tts-1', input: 'fail', voice: 'alloy', stream: true }),
        502,
        'upstream_error',
      );
      openai.script({ cutAfter: 0 });
      await expectError(
        await post(key, { model: 'openai/tts-1', input: 'fail', voice: 'alloy', stream: true }),
        502,
        'upstream_unreachable',
      );
      openai.script({ status: 429, message: 'slow down' });
      await expectError(
        await post(key, { model: 'openai/tts-1', input: 'fail', voice: 'alloy' }),
        429,
        'rate_limit_exceeded',
      );
      // non-streaming: audio cut midway never reached the caller, so it is not billed either
      openai.script({ cutAfter: 1 });
      e = await expectError(
        await post(key, { model: 'openai/tts-1', input: 'fail', voice: 'alloy' }),
        502,
        'upstream_error',
      );
      assert.match(e.message, /Nothing was charged/);
      const b = await usd(accountId);
      assert.equal(b.amount, 1_000_000_000n);
      assert.equal(b.held, 0n);
    });

    it('a stream cut after the first chunk is billed (the audio began)', async () => {
      const { key, accountId } = await newAccount('1');
      openai.script({ chunks: 3, cutAfter: 1 });
      const res = await post(key, { model: 'openai/tts-1', input: 'cut', voice: 'alloy', stream: true });
      assert.equal(res.status, 200);
      await res.arrayBuffer().catch(() => undefined);
      assert.equal((await usd(accountId)).amount, 1_000_000_000n - priceOf('openai/tts-1', 3));
    });
  });

  describe('ElevenLabs text to speech (loopback)', () => {
    it('maps the voice name to its id, sends xi-api-key, always answers audio/mpeg', async () => {
      const { key, accountId } = await newAccount('1');
      const input = 'Bonjour tout le monde';
      const res = await post(key, {
        model: 'elevenlabs/eleven_multilingual_v2',
        input,
        voice: 'Rachel',
        response_format: 'wav',
      });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(res.headers.get('content-type'), 'audio/mpeg');
      const audio = Buffer.from(await res.arrayBuffer());
      assert.ok(isMp3Start(audio));
      const r = eleven.requests.at(-1)!;
      assert.equal(r.path, '/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM/stream');
      assert.equal(r.query.get('output_format'), 'mp3_44100_128');
      assert.equal(r.headers['xi-api-key'], eleven.apiKey);
      assert.deepEqual(r.body, { text: input, model_id: 'eleven_multilingual_v2' });
      assert.equal(
        (await usd(accountId)).amount,
        1_000_000_000n - priceOf('elevenlabs/eleven_multilingual_v2', input.length),
      );
    });

    it('accepts a raw voice id, streams chunked, and a failure before audio costs nothing', async () => {
      const { key, accountId } = await newAccount('1');
      const res = await post(key, {
        model: 'eleven_multilingual_v2',
        input: 'Hey',
        voice: 'AbCdEfGhIjKlMnOpQrSt',
        stream: true,
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-length'), null);
      assert.equal(res.headers.get('transfer-encoding'), 'chunked');
      await res.arrayBuffer();
      assert.equal(eleven.requests.at(-1)!.path, '/v1/text-to-speech/AbCdEfGhIjKlMnOpQrSt/stream');
      const paid = priceOf('elevenlabs/eleven_multilingual_v2', 3);
      eleven.script({ status: 401, message: 'Invalid API key' });
      const e = await expectError(
        await post(key, { model: 'eleven_multilingual_v2', input: 'Hey', voice: 'adam', stream: true }),
        502,
        'upstream_error',
      );
      assert.match(e.message, /^elevenlabs refused the gateway's credentials/);
      assert.doesNotMatch(e.message, /Invalid API key/);
      assert.equal((await usd(accountId)).amount, 1_000_000_000n - paid);
    });
  });

  it('without provider keys the hosted models are unavailable but local speech still works', async () => {
    for (const k of ENV) delete process.env[k];
    await loadCatalog();
    try {
      const { key } = await newAccount('1');
      const e = await expectError(
        await post(key, { model: 'openai/tts-1', input: 'hi', voice: 'alloy' }),
        503,
        'model_not_available',
      );
      assert.match(e.message, /Set OPENAI_API_KEY to enable it\./);
      const res = await post(key, { model: 'local/espeak', input: 'hi', voice: 'alloy' });
      assert.equal(res.status, 200);
      assert.ok(isMp3Start(Buffer.from(await res.arrayBuffer())));
    } finally {
      Object.assign(process.env, speechEnv(openai, eleven));
      await loadCatalog();
    }
  });
});
