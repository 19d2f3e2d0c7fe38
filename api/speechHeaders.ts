// How a speech answer states its bill when its body is the audio itself: X-Cost (USD), X-Charged
// (in X-Payment-Source's currency), X-Characters, and X-Seconds for music.
import type { Context } from 'koa';
import type { SpeechBill } from '../activities/media/speech.js';

export function billingHeaders(ctx: Context, bill: SpeechBill): void {
  ctx.set('X-Cost', String(bill.cost));
  ctx.set('X-Charged', String(bill.amount));
  ctx.set('X-Payment-Source', bill.paymentSource);
  ctx.set('X-Characters', String(bill.characters));
  if (bill.seconds !== undefined) ctx.set('X-Seconds', String(bill.seconds));
}
