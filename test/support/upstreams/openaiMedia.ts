// OpenAI's image and speech-to-text routes behind one base URL, as the real API has them: a front
// server that passes /images/... to the images loopback and /audio/... to the transcription
// loopback, byte for byte, so one OPENAI_BASE_URL serves both (the client compatibility tests).
import http from 'node:http';
import { type ImagesUpstream, startImagesUpstream } from './images.js';
import { startTranscriptionUpstream, type TranscriptionUpstream } from './transcription.js';
import { listenOnLoopback, closeServer } from './loopback.js';

export interface OpenAIMediaUpstream {
  url: string;
  apiKey: string;
  images: ImagesUpstream;
  transcription: TranscriptionUpstream;
  close(): Promise<void>;
}

export async function startOpenAIMediaUpstream(): Promise<OpenAIMediaUpstream> {
  const apiKey = 'sk-media-loopback';
  const images = await startImagesUpstream(apiKey);
  const transcription = await startTranscriptionUpstream(apiKey);
  const server = http.createServer((req, res) => {
    const to = new URL((req.url ?? '/').startsWith('/audio/') ? transcription.url : images.url);
    const out = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  const { port } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    images,
    transcription,
    close: async () => {
      await closeServer(server);
      await images.close();
      await transcription.close();
    },
  };
}
