// `X-Billing-Mode` (spec: "forces pay-as-you-go", accepted values such as `paygo`): read once per
// request on the text surfaces, before anything is reserved. Its spellings are the body field's
// (`billing_mode` on completions): `paygo`, `pay-as-you-go`, `pay_as_you_go`, `paid`, `payg`,
// case-insensitive. Any other value is a 400 naming the header, rather than a silent default: a
// caller who writes a billing mode means it. The outcome is `ctx.state.forcePaygo`.
//
// What forcing changes: this gateway has no subscriptions, so every request is pay-as-you-go
// already; a forced one is refused outright on a `subscription_only` key (which may not pay as it
// goes) with a message naming the header, instead of the generic "no subscription covers this".
import type { Middleware } from 'koa';
import { PAYGO_BILLING_MODES } from '../../activities/surfaces/schemas/completions.js';
import { RequestError } from '../../activities/core/errors.js';
import type { AppState } from '../state.js';

export const billingMode: Middleware<AppState> = (ctx, next) => {
  const raw = ctx.get('x-billing-mode').trim();
  if (raw) {
    if (!(PAYGO_BILLING_MODES as readonly string[]).includes(raw.toLowerCase())) {
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `X-Billing-Mode '${raw.slice(0, 40)}' is not a billing mode; use one of ${PAYGO_BILLING_MODES.join(', ')} (pay-as-you-go), or leave the header out.`,
        { param: 'X-Billing-Mode' },
      );
    }
    ctx.state.forcePaygo = true;
  }
  return next();
};
