// POST /api/check-balance (GET too): the account's balances, as some existing clients read them.
// POST /api/check-nano-balance (GET too): the same, plus the top-level `balance` (the Nano balance,
// as a decimal string like the others: 30 decimal places do not fit a JSON number) that older
// NanoGPT clients read. They also read `nanoDepositAddress` when the account has one; accounts
// here have no standing Nano address (deposits get an address per invoice), so it is absent.
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { balances } from '../../activities/ledger/ledger.js';
import { formatAmount } from '../../activities/core/money.js';
import { RequestError } from '../../activities/core/errors.js';
import type { AppState } from '../state.js';

export const balanceRouter = new Router<AppState>();

balanceRouter.all(['/api/check-balance', '/api/check-nano-balance'], surface('legacy'), authenticate, async (ctx) => {
  if (ctx.method !== 'GET' && ctx.method !== 'POST')
    throw new RequestError(405, 'method_not_allowed', 'Use GET or POST.');
  const caller = ctx.state.caller;
  const b = (await balances(caller.accountId))!;
  ctx.body = {
    ...(ctx.path === '/api/check-nano-balance' ? { balance: formatAmount(b.XNO.amount, 'XNO') } : {}),
    usd_balance: formatAmount(b.USD.amount, 'USD'),
    nano_balance: formatAmount(b.XNO.amount, 'XNO'),
    // held = reserved by requests still running; available = what new requests can use
    usd_held: formatAmount(b.USD.held, 'USD'),
    usd_available: formatAmount(b.USD.available, 'USD'),
  };
});
