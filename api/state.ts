// What every request carries on `ctx.state`, typed once: the app's routers are `Router<AppState>`
// and middleware is `Middleware<AppState>`, so routes read `ctx.state.caller` without casts.
import type { ParameterizedContext } from 'koa';
import type { Caller } from '../activities/core/caller.js';
import type { SessionView } from '../activities/accounts/sessions.js';
import type { Envelope } from '../activities/surfaces/errors.js';
import type { X402State } from '../activities/x402/payments.js';

export interface AppState {
  /** `req_<hex>`, also the X-Request-ID header (middleware/requestId.ts) */
  requestId: string;
  /** the authenticated caller; set by middleware/auth.ts, read only by routes mounted after it */
  caller: Caller;
  /** the session behind the caller, when it signed in with the session cookie (middleware/auth.ts) */
  session?: SessionView;
  /** the error envelope of the route's surface (middleware/surface.ts) */
  envelope?: Envelope;
  /** `X-Billing-Mode` asked for pay-as-you-go (middleware/billingMode.ts) */
  forcePaygo?: boolean;
  /** reached through the `/api/v1thinking/` base path: reasoning on where the model can (middleware/thinkingPath.ts) */
  thinkingPath?: boolean;
  /** an accountless request paying with x402 (x402.ts); the caller is then the x402 house account */
  x402?: X402State;
  /** the validated, coerced query string (validate.ts validateQuery) */
  query: Record<string, unknown>;
}

export type AppContext = ParameterizedContext<AppState>;
