// Every provider in the catalog served by a loopback upstream speaking its real protocol, so a
// request that passes validation goes all the way: OpenAI-protocol vendors (chat, completions,
// speech, speech to text, images, embeddings and moderations on one host, as api.openai.com has them), Anthropic, Gemini, ElevenLabs, and fal's queue
// for video (Midjourney-style too). The built-in local providers (llama.cpp, eSpeak) need nothing.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readCatalogFile } from '../../activities/catalog/file.js';
import { startSearchUpstream } from '../support/upstreams/search.js';
import { config } from '../../activities/config.js';
import { type AnthropicUpstream, startAnthropicUpstream } from '../support/upstreams/anthropic.js';
import { type FalUpstream, startFalUpstream } from '../support/upstreams/fal.js';
import { type GeminiUpstream, startGeminiUpstream } from '../support/upstreams/gemini.js';
import { type EmbeddingsUpstream, startEmbeddingsUpstream } from '../support/upstreams/embeddings.js';
import { type ImagesUpstream, startImagesUpstream } from '../support/upstreams/images.js';
import { type OpenAIUpstream, startOpenAIUpstream } from '../support/upstreams/openai.js';
import { startTranscriptionUpstream, type TranscriptionUpstream } from '../support/upstreams/transcription.js';
import {
  type SpeechUpstream,
  startElevenLabsUpstream,
  startOpenAISpeechUpstream,
} from '../support/upstreams/speech.js';

export interface Upstreams {
  /** provider settings: `<PROVIDER>_API_KEY` / `_BASE_URL` for every catalog provider */
  env: Record<string, string>;
  /** the keys and addresses a caller must never see */
  secrets: string[];
  fal: FalUpstream;
  /**
   * Every upstream fails each request this way until heal(): 'down' = its 5xx (or overloaded) error,
   * 'credentials' = its 401 for a bad key, 'cut' = the answer breaks off after it began. Error
   * texts carry UPSTREAM_TEXT, which no caller may see.
   */
  fail(how: 'down' | 'credentials' | 'cut'): void;
  heal(): void;
  /** forget what the upstreams recorded (a long run would keep every request otherwise) */
  forget(): void;
  close(): Promise<void>;
}

/** Where the OpenAI host sends a path: each loopback serves its routes at its own root, with its own key. */
interface Behind {
  url: URL;
  apiKey: string;
  /** the part of the gateway's path the loopback does not expect */
  strip: string;
}

/**
 * One port for all of OpenAI's loopbacks, as api.openai.com has them under one base URL:
 * `/v1/audio/speech` goes to speech, `/v1/audio/transcriptions` and `/translations` to speech to
 * text, `/v1/images/...` to images, `/v1/embeddings` to embeddings, the rest (chat, completions,
 * responses, moderations) to chat.
 */
async function openAIHost(
  chat: OpenAIUpstream,
  speech: SpeechUpstream,
  embeddings: EmbeddingsUpstream,
  images: ImagesUpstream,
  transcription: TranscriptionUpstream,
): Promise<{ url: string; close(): Promise<void> }> {
  const behind = (u: { url: string; apiKey: string }, strip: string): Behind => ({
    url: new URL(u.url),
    apiKey: u.apiKey,
    strip,
  });
  const chatBehind: Behind = { url: new URL(chat.url), apiKey: chat.apiKey!, strip: '' };
  const routes: Array<[RegExp, Behind]> = [
    [/^\/v1\/audio\/(transcriptions|translations)$/, behind(transcription, '/v1')],
    [/^\/v1\/audio\//, behind(speech, '')],
    [/^\/v1\/images\//, behind(images, '/v1')],
    [/^\/v1\/embeddings$/, behind({ url: embeddings.url, apiKey: embeddings.apiKey }, '/v1')],
  ];
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const to = routes.find(([re]) => re.test(url))?.[1] ?? chatBehind;
    // each loopback server checks its own key; the gateway holds one OpenAI key
    const headers = { ...req.headers, authorization: `Bearer ${to.apiKey}` };
    const path = url.slice(to.strip.length);
    const forward = http.request(
      { host: to.url.hostname, port: to.url.port, method: req.method, path, headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
        // an answer cut off upstream is cut off here too
        up.on('aborted', () => res.destroy());
        up.on('error', () => res.destroy());
      },
    );
    forward.on('error', () => res.destroy());
    res.on('close', () => forward.destroy());
    req.pipe(forward);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** In every upstream error message while the upstreams fail: the operator's to read, never a caller's. */
const UPSTREAM_TEXT = 'upstream-internal-9f3c';

/**
 * The loopback chat model's first-token distribution: its replies begin with a letter, and the
 * alternatives hold option letters, as a model asked a decision row's question answers.
 */
const CHAT_DEFAULTS = { nextTokens: { A: -0.5, B: -1.5, C: -2.5, D: -3.5 } };

export async function startUpstreams(): Promise<Upstreams> {
  const chat = await startOpenAIUpstream();
  chat.defaults(CHAT_DEFAULTS);
  const speech = await startOpenAISpeechUpstream();
  const embeddings = await startEmbeddingsUpstream();
  const images = await startImagesUpstream();
  const transcription = await startTranscriptionUpstream();
  const openai = await openAIHost(chat, speech, embeddings, images, transcription);
  const anthropic: AnthropicUpstream = await startAnthropicUpstream();
  const gemini: GeminiUpstream = await startGeminiUpstream();
  const eleven = await startElevenLabsUpstream();
  const file = await readCatalogFile(config.catalogFile);
  // fal routes run synchronously (`sync: true`) post to the run host, which answers their output
  const syncModels = file.models.flatMap((m) =>
    m.routes.filter((r) => r.providerId === 'fal' && r.options.sync === true).map((r) => r.upstreamModel),
  );
  const fal = await startFalUpstream(undefined, { syncModels });
  // web search: every search provider the gateway speaks, over a few documents
  const docs = [
    { title: 'Tides', url: 'https://tides.example.org/fundy', content: 'The highest tides.', date: '2025-03-01' },
  ];
  const linkup = await startSearchUpstream('linkup', docs);
  const tavily = await startSearchUpstream('tavily', docs);
  const searxng = await startSearchUpstream('searxng', docs);
  const env: Record<string, string> = {
    LINKUP_API_KEY: linkup.apiKey,
    LINKUP_BASE_URL: linkup.url,
    TAVILY_API_KEY: tavily.apiKey,
    TAVILY_BASE_URL: tavily.url,
    SEARXNG_URL: searxng.url,
    ANTHROPIC_API_KEY: anthropic.apiKey,
    ANTHROPIC_BASE_URL: anthropic.url,
    GEMINI_API_KEY: gemini.apiKey,
    GEMINI_BASE_URL: gemini.url,
    ELEVENLABS_API_KEY: eleven.apiKey,
    ELEVENLABS_BASE_URL: eleven.url,
    FAL_API_KEY: fal.apiKey,
    FAL_BASE_URL: fal.url,
    MIDJOURNEY_API_KEY: fal.apiKey,
    MIDJOURNEY_BASE_URL: fal.url,
    // the loopback fal serves the finished videos; no other private address may be fetched
    SWITCHYARD_FETCH_ALLOW_PRIVATE: '127.0.0.1/32',
    SWITCHYARD_VIDEO_POLL_MS: '200',
  };
  // every OpenAI-protocol vendor (hosted or self-hosted, confidential or not) is the loopback OpenAI host
  for (const p of file.providers) {
    if (p.protocol !== 'openai' && p.protocol !== 'openai-tee') continue;
    const prefix = p.id.toUpperCase().replace(/[^A-Z0-9]/g, '_');
    env[`${prefix}_API_KEY`] = chat.apiKey!;
    env[`${prefix}_BASE_URL`] = openai.url;
  }
  const ports = [
    chat.url,
    speech.url,
    embeddings.url,
    images.url,
    transcription.url,
    openai.url,
    anthropic.url,
    gemini.url,
    eleven.url,
    fal.url,
  ].map((u) => new URL(u).host);
  return {
    env,
    secrets: [
      UPSTREAM_TEXT,
      chat.apiKey!,
      speech.apiKey,
      images.apiKey,
      transcription.apiKey,
      embeddings.apiKey,
      anthropic.apiKey,
      gemini.apiKey,
      eleven.apiKey,
      fal.apiKey,
      linkup.apiKey,
      tavily.apiKey,
      ...ports,
    ],
    fal,
    fail(how) {
      const said = how === 'credentials' ? 'Incorrect API key provided: sk-live-12****' : 'Internal failure';
      const message = `${said} (${UPSTREAM_TEXT})`;
      const status = how === 'credentials' ? 401 : 503;
      const many = <T>(x: T) => Array.from({ length: 5000 }, () => x);
      if (how === 'cut') {
        chat.defaults({ cutAfter: 1, cutMode: 'destroy' });
        anthropic.always({ cut: { afterEvents: 2, mode: 'destroy' } });
        gemini.script(...many({ cutAfter: 1 }));
        speech.script(...many({ cutAfter: 1 }));
        eleven.script(...many({ cutAfter: 1 }));
        embeddings.script(...many({ drop: true }));
        // neither speaks a cut answer: a JSON reply that breaks off is a 500 to the gateway
        images.script(...many({ status: 500 as const }));
        transcription.script(...many({ status: 500 as const }));
        return;
      }
      chat.defaults({ status, error: { message } });
      anthropic.always({ error: { status: how === 'credentials' ? 401 : 529, message } });
      gemini.script(...many({ error: { status, message } }));
      speech.script(...many({ status, message }));
      eleven.script(...many({ status, message }));
      embeddings.script(...many({ status, message }));
      images.script(...many({ status: 500 as const }));
      transcription.script(...many({ status: 500 as const }));
    },
    heal() {
      chat.defaults(CHAT_DEFAULTS);
      anthropic.always(undefined);
      gemini.reset();
      speech.script();
      eleven.script();
      embeddings.script();
      images.script();
      transcription.script();
    },
    forget() {
      chat.requests.length = 0;
      gemini.requests.length = 0;
      anthropic.requests.length = 0;
      speech.requests.length = 0;
      embeddings.requests.length = 0;
      images.requests.length = 0;
      transcription.requests.length = 0;
      eleven.requests.length = 0;
      fal.requests.length = 0;
    },
    async close() {
      await openai.close();
      for (const u of [
        chat,
        speech,
        embeddings,
        images,
        transcription,
        anthropic,
        gemini,
        eleven,
        fal,
        linkup,
        tavily,
        searxng,
      ])
        await u.close();
    },
  };
}
