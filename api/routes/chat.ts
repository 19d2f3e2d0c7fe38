// POST /api/v1/chat/completions (and /v1/...): OpenAI-style chat, streaming or not. The surface is
// its codec (activities/surfaces/codecs/chat.ts); the text pipeline answers it.
import Router from '@koa/router';
import { chatCodec } from '../../activities/surfaces/codecs/chat.js';
import { v1 } from '../paths.js';
import type { AppState } from '../state.js';
import { textRoute } from '../textRoute.js';

export const chatRouter = new Router<AppState>();

// the subscription's path is the same route: the allowance applies on both (README, Subscriptions)
textRoute(chatRouter, [...v1('/chat/completions'), '/api/subscription/v1/chat/completions'], chatCodec);
