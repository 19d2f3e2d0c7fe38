// POST /api/v1/completions (and /v1/...): OpenAI's legacy text completions, streaming or not, in
// the OpenAI error envelope. The surface is its codec (activities/surfaces/codecs/completions.ts);
// the text pipeline answers it.
import Router from '@koa/router';
import { completionsCodec } from '../../activities/surfaces/codecs/completions.js';
import { v1 } from '../paths.js';
import type { AppState } from '../state.js';
import { textRoute } from '../textRoute.js';

export const completionsRouter = new Router<AppState>();

textRoute(completionsRouter, v1('/completions'), completionsCodec);
