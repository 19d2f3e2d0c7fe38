// When a whole answer's charge stands: once the response has been written out (HTTP knows).
import type { Context } from 'koa';
import type { MeteredCall } from '../activities/metering/meteredCall.js';

/**
 * A charged answer that is not a stream counts as delivered once it has been written out whole.
 * If the response closes before that (the caller left while the answer was being settled or
 * written) the charge is refunded: an answer the caller never received is not charged.
 */
export function chargeOnDelivery(ctx: Context, metered: MeteredCall): void {
  if (!metered.awaitingDelivery) return;
  const res = ctx.res;
  const undelivered = () =>
    void metered
      .abandon('client_closed')
      .catch((err) => console.error(`[api] ${ctx.state.requestId}: could not refund an undelivered answer:`, err));
  // already gone: Koa will not even try to write
  if (!ctx.writable) {
    undelivered();
    return;
  }
  // One listener: a response emits 'close' after 'finish' too, so 'close' alone tells both apart
  res.once('close', () => {
    if (res.writableFinished) metered.delivered();
    else undelivered();
  });
}
