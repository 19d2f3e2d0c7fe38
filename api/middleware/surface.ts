// What every route declares first: which API surface it belongs to. That fixes the error
// envelope (so even a malformed body or a bad key is answered in the caller's dialect); then
// the URL's parameters are checked for what cannot be stored (NUL) and the JSON body is parsed.
import compose from 'koa-compose';
import type { Middleware } from 'koa';
import type { Envelope } from '../errors.js';
import { useEnvelope } from './errors.js';
import { jsonBody } from './body.js';
import { refuseNulInUrl } from './nul.js';
import { config } from '../../activities/config.js';
import type { AppState } from '../state.js';

export function surface(envelope: Envelope): Middleware<AppState> {
  return compose([
    useEnvelope(envelope),
    refuseNulInUrl,
    jsonBody({ limitBytes: config.bodyLimitBytes, maxDepth: config.maxJsonDepth }),
  ]);
}
