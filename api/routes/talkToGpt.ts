// POST /api/talk-to-gpt (and /api/talk-to-gemini, its twin that older clients call for Gemini
// models: the same endpoint, any model): the legacy text endpoint. Key in `x-api-key` (Bearer
// works too), errors in the legacy envelope; the answer is text/plain (the surface's codec,
// activities/surfaces/codecs/talkToGpt.ts).
import Router from '@koa/router';
import { talkToGptCodec } from '../../activities/surfaces/codecs/talkToGpt.js';
import type { AppState } from '../state.js';
import { textRoute } from '../textRoute.js';

export const talkToGptRouter = new Router<AppState>();

textRoute(talkToGptRouter, ['/api/talk-to-gpt', '/api/talk-to-gemini'], talkToGptCodec);
