// A signed-in user's own API keys (session cookie only: a leaked key cannot mint more keys).
// Teams-style envelope, like the rest of the session routes (api/routes/auth.ts).
//   GET    /api/keys                       {keys:[...]}, newest last; never the key itself
//   POST   /api/keys   {name?, daily_request_limit?, daily_usd_limit?, provider_allow?, provider_deny?,
//                       zdr_only?, billing_mode?, redaction?, expires_at?}
//                                          201 {key: "sk-…", ...} — the key is shown this once
//   DELETE /api/keys   {id: <key id or display prefix>}   (or ?id=, or DELETE /api/keys/<id>)   {ok, revoked}
// The restrictions are the ones `npm run ops -- keys create` offers; both go through
// activities/accounts/keys.ts (createKey, listKeys, revokeKey), the same functions.
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { requireSession } from '../middleware/auth.js';
import { validateBody } from '../validate.js';
import { createKeySchema } from '../../activities/surfaces/schemas/auth.js';
import type { AppContext, AppState } from '../state.js';
import { RequestError } from '../../activities/core/errors.js';
import { createKey, listKeys, revokeKey } from '../../activities/accounts/keys.js';
import { formatAmount, parseAmount, parseLimit } from '../../activities/core/money.js';

export const keysRouter = new Router<AppState>();

type KeyRecord = Awaited<ReturnType<typeof listKeys>>[number];

function keyView(k: KeyRecord) {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    status: k.status,
    created_at: k.createdAt,
    expires_at: k.expiresAt,
    revoked_at: k.revokedAt,
    daily_request_limit: k.dailyRequestLimit,
    daily_usd_limit: k.dailyUsdLimit == null ? null : formatAmount(BigInt(k.dailyUsdLimit.toString()), 'USD'),
    provider_allow: k.providerAllow,
    provider_deny: k.providerDeny,
    zdr_only: k.zdrOnly,
    billing_mode: k.billingMode,
    redaction: k.redaction,
  };
}

interface CreateKeyBody {
  name?: string;
  daily_request_limit?: number | null;
  daily_usd_limit?: number | string | null;
  provider_allow?: string[];
  provider_deny?: string[];
  zdr_only?: boolean;
  billing_mode?: 'auto' | 'paygo' | 'subscription_only';
  redaction?: 'inherit' | 'always' | 'never';
  expires_at?: string | null;
}

keysRouter.get('/api/keys', surface('teams'), requireSession, async (ctx) => {
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { keys: (await listKeys(ctx.state.caller.accountId)).map(keyView) };
});

keysRouter.post('/api/keys', surface('teams'), requireSession, validateBody(createKeySchema), async (ctx) => {
  const b = ctx.request.body as CreateKeyBody;
  const expiresAt = b.expires_at ? new Date(b.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    throw new RequestError(422, 'invalid_parameter_value', "'expires_at' is in the past.", {
      param: 'expires_at',
    });
  }
  const { key, record } = await createKey(ctx.state.caller.accountId, {
    name: b.name?.trim() || undefined,
    dailyRequestLimit: b.daily_request_limit ?? null,
    dailyUsdLimit:
      b.daily_usd_limit == null
        ? null
        : typeof b.daily_usd_limit === 'number'
          ? parseLimit(b.daily_usd_limit, 'USD')
          : parseAmount(b.daily_usd_limit, 'USD'),
    providerAllow: b.provider_allow,
    providerDeny: b.provider_deny,
    zdrOnly: b.zdr_only,
    billingMode: b.billing_mode,
    redaction: b.redaction,
    expiresAt,
  });
  ctx.status = 201;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { key, ...keyView(record) };
});

async function revoke(ctx: AppContext, id: unknown): Promise<void> {
  if (typeof id !== 'string' || !id.trim() || id.length > 100) {
    throw new RequestError(422, 'missing_required_parameter', "Name the key to revoke: 'id' (its id or prefix).", {
      param: 'id',
    });
  }
  const revoked = await revokeKey(id.trim(), ctx.state.caller.accountId);
  if (revoked === 0) {
    throw new RequestError(404, 'key_not_found', `You have no active key "${id.trim()}".`, {
      details: { reason: 'key_not_found' },
    });
  }
  ctx.body = { ok: true, revoked };
}

keysRouter.delete('/api/keys', surface('teams'), requireSession, (ctx) => {
  const body = ctx.request.body as { id?: unknown } | undefined;
  return revoke(ctx, body?.id ?? ctx.query.id);
});
keysRouter.delete('/api/keys/:id', surface('teams'), requireSession, (ctx) => revoke(ctx, ctx.params.id));
