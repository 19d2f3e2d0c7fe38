// Every provider in the catalog served by a loopback upstream speaking its real protocol, so a
// request that passes validation goes all the way: OpenAI-protocol vendors (chat, completions,
// speech and embeddings on one host, as api.openai.com has them), Anthropic, Gemini, ElevenLabs, and fal's queue
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
import { type OpenAIUpstream, startOpenAIUpstream } from '../support/upstreams/openai.js';
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

/**
 * One port for OpenAI's chat, speech and embeddings upstreams: `/v1/audio/speech` goes to speech,
 * `/v1/embeddings` to embeddings (served at its root), the rest to chat.
 */
async function openAIHost(
  chat: OpenAIUpstream,
  speech: SpeechUpstream,
  embeddings: EmbeddingsUpstream,
): Promise<{ url: string; close(): Promise<void> }> {
  const chatUrl = new URL(chat.url);
  const speechUrl = new URL(speech.url);
  const embeddingsUrl = new URL(embeddings.url);
  const server = http.createServer((req, res) => {
    const embed = req.url === '/v1/embeddings';
    const to = req.url?.startsWith('/v1/audio/') ? speechUrl : embed ? embeddingsUrl : chatUrl;
    const headers = { ...req.headers };
    // each loopback server checks its own key; the gateway holds one OpenAI key
    if (to === speechUrl) headers.authorization = `Bearer ${speech.apiKey}`;
    if (embed) headers.authorization = `Bearer ${embeddings.apiKey}`;
    const path = embed ? '/embeddings' : req.url;
    const forward = http.request({ host: to.hostname, port: to.port, method: req.method, path, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
      // an answer cut off upstream is cut off here too
      up.on('aborted', () => res.destroy());
      up.on('error', () => res.destroy());
    });
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
  const openai = await openAIHost(chat, speech, embeddings);
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
  const ports = [chat.url, speech.url, embeddings.url, openai.url, anthropic.url, gemini.url, eleven.url, fal.url].map(
    (u) => new URL(u).host,
  );
  return {
    env,
    secrets: [
      UPSTREAM_TEXT,
      chat.apiKey!,
      speech.apiKey,
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
        return;
      }
      chat.defaults({ status, error: { message } });
      anthropic.always({ error: { status: how === 'credentials' ? 401 : 529, message } });
      gemini.script(...many({ error: { status, message } }));
      speech.script(...many({ status, message }));
      eleven.script(...many({ status, message }));
      embeddings.script(...many({ status, message }));
    },
    heal() {
      chat.defaults(CHAT_DEFAULTS);
      anthropic.always(undefined);
      gemini.reset();
      speech.script();
      eleven.script();
      embeddings.script();
    },
    forget() {
      chat.requests.length = 0;
      gemini.requests.length = 0;
      anthropic.requests.length = 0;
      speech.requests.length = 0;
      embeddings.requests.length = 0;
      eleven.requests.length = 0;
      fal.requests.length = 0;
    },
    async close() {
      await openai.close();
      for (const u of [chat, speech, embeddings, anthropic, gemini, eleven, fal, linkup, tavily, searxng])
        await u.close();
    },
  };
}
