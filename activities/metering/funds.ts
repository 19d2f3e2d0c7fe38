// The money behind one metered call (meteredCall.ts) and how its worst case is reserved: one
// operation of the caller's subscription when it covers the call (nothing is reserved then), else a
// share of this process's credit lease or an exact hold, on the team owner's account when the
// caller bills to a team. A shortfall is a 402 that says why; a team that cannot pay is a 403.
// The arithmetic and the idempotency are the ledger's (activities/ledger/).
import { type Currency, formatAmount, toDisplayNumber } from '../core/money.js';
import { RequestError } from '../core/errors.js';
import { type AllowanceClaim, type Bypass, claimAllowance } from '../ledger/allowance.js';
import { type LeasedFunds, reserveFromLease } from '../ledger/leases.js';
import { InsufficientFunds } from '../ledger/ledger.js';
import { reserve } from '../ledger/holds.js';
import { releaseTeamBudget, reserveTeamBudget, type TeamBilling, teamBillingOf } from '../ledger/teamBudget.js';
import type { MeteredCallSpec } from './callSpec.js';

/** What pays for a call, as far as it is known: filled in by reserveFunds (or a job's adopted hold). */
export interface Funds {
  /** the subscription's operation this call spent, when the subscription pays for it */
  allowance?: AllowanceClaim;
  /** the team paying for this call, when its caller bills to one (synchronous calls only) */
  team?: TeamBilling;
  /** the reservation when it came from this process's credit lease (no round trip; leases.ts) */
  leased?: LeasedFunds;
  /** the exact hold, when the reservation is one */
  holdId?: string;
}

/** What a reservation set aside, as the caller's currency shows it. */
export interface Reserved {
  currency: Currency;
  amount: bigint;
  available: bigint;
}

/**
 * Reserve the worst case into `funds`, unless the caller's subscription pays (then nothing is
 * reserved). A free call reserves nothing; a shortfall is a 402 that says why. `worst` is asked
 * only once the subscription and the team have had their say.
 */
export async function reserveFunds(
  spec: MeteredCallSpec,
  funds: Funds,
  worst: () => bigint,
): Promise<Reserved | undefined> {
  const { caller, requestId, holdTtlSeconds } = spec;
  funds.allowance = await claimAllowance({ caller, modelId: spec.modelId, bypass: bypass(spec) });
  if (funds.allowance) return undefined;
  // Team billing covers synchronous calls; a job's money is its caller's own (README, Teams).
  if (caller.userId != null && holdTtlSeconds === undefined) await billToTeam(spec.modelId, caller.userId, funds);
  const usd = worst();
  if (usd === 0n) return undefined;
  if (funds.team) return reserveForTeam(spec, funds, funds.team, caller.userId!, usd);
  // Keys with a daily USD cap are checked exactly, so they never lease; jobs never lease either
  // (their reservation outlives this process's lease bookkeeping), unless their answer and its
  // charge are written together (storesAnswer).
  if (spec.creditLease && (holdTtlSeconds === undefined || spec.storesAnswer) && caller.dailyUsdLimit == null) {
    funds.leased = await reserveFromLease(caller.accountId, usd);
    if (funds.leased) return { currency: 'USD', amount: usd, available: 0n };
  }
  try {
    const hold = await reserve({
      accountId: caller.accountId,
      usd,
      idempotencyKey: spec.holdKey ?? `hold:${requestId}`,
      requestId,
      apiKeyId: caller.keyId ?? undefined,
      ttlSeconds: holdTtlSeconds,
    });
    funds.holdId = hold.id;
    return { currency: hold.currency, amount: hold.amount, available: hold.available };
  } catch (err) {
    if (!(err instanceof InsufficientFunds)) throw err;
    throw new RequestError(
      402,
      'insufficient_balance',
      `Insufficient balance: ${spec.shortfall(formatAmount(err.requiredUsd, 'USD'), formatAmount(err.availableUsd, 'USD'))}`,
      {
        details: {
          requiredBalance: toDisplayNumber(err.requiredUsd, 'USD'),
          availableBalance: toDisplayNumber(err.availableUsd, 'USD'),
        },
      },
    );
  }
}

/** Why the subscription may not pay for this call, whatever it covers (spec: Authentication, Chat). */
function bypass(spec: MeteredCallSpec): Bypass | undefined {
  if (spec.forcePaygo) return 'paygo';
  if (spec.explicitProvider) return 'provider';
  // a job's reservation outlives the request (README, Subscriptions)
  if (spec.holdTtlSeconds !== undefined) return 'job';
  return undefined;
}

/** Does the caller bill to a team? Then the team must be active and allow the model (else 403). */
async function billToTeam(modelId: string, userId: number, funds: Funds): Promise<void> {
  const team = await teamBillingOf(userId);
  if (!team) return;
  if (team.status !== 'active') {
    throw new RequestError(
      403,
      `team_${team.status}`,
      `Your requests are billed to the team "${team.teamName}", which is ${team.status}. Ask its owner or an ` +
        'admin to make it active, or turn bill_to_team off to pay from your own balance.',
      { details: { teamId: team.teamUuid, reason: `team_${team.status}` } },
    );
  }
  if (team.allowedModels?.[modelId] === false) {
    throw new RequestError(
      403,
      'model_not_allowed',
      `The team "${team.teamName}" does not allow the model '${modelId}' for requests billed to it.`,
      { param: 'model', details: { teamId: team.teamUuid, model: modelId } },
    );
  }
  funds.team = team;
}

/**
 * Reserve a team-billed call: first its claim on the member's and the team's monthly budgets
 * (one conditional statement, teamBudget.ts), then an exact hold on the owner's account, whose
 * charge entry names the team and the member. A refused hold gives the claim back.
 */
async function reserveForTeam(
  spec: MeteredCallSpec,
  funds: Funds,
  team: TeamBilling,
  userId: number,
  worst: bigint,
): Promise<Reserved> {
  const { requestId } = spec;
  const verdict = await reserveTeamBudget(team, userId, requestId, worst);
  if (!verdict.ok) {
    const whose = verdict.scope === 'member' ? 'your monthly limit in' : 'the monthly limit of';
    throw new RequestError(
      402,
      'team_usage_limit_exceeded',
      `This request may cost up to $${formatAmount(worst, 'USD')}, which would pass ${whose} the team ` +
        `"${team.teamName}" ($${formatAmount(verdict.used, 'USD')} of $${formatAmount(verdict.limit, 'USD')} ` +
        'used or reserved this month). Lower max_tokens, wait for next month, or ask the team to raise the limit.',
      {
        details: {
          scope: verdict.scope,
          limit: toDisplayNumber(verdict.limit, 'USD'),
          used: toDisplayNumber(verdict.used, 'USD'),
          teamId: team.teamUuid,
        },
      },
    );
  }
  try {
    const hold = await reserve({
      accountId: team.ownerAccountId,
      usd: worst,
      idempotencyKey: spec.holdKey ?? `hold:${requestId}`,
      requestId,
      apiKeyId: spec.caller.keyId ?? undefined,
      team: { teamId: team.teamId, actorUserId: userId },
    });
    funds.holdId = hold.id;
    return { currency: hold.currency, amount: hold.amount, available: hold.available };
  } catch (err) {
    await releaseTeamBudget(requestId);
    if (!(err instanceof InsufficientFunds)) throw err;
    throw new RequestError(
      402,
      'insufficient_balance',
      `Insufficient balance: the team "${team.teamName}" pays for your requests, and its owner's account has ` +
        `$${formatAmount(err.availableUsd, 'USD')} available for a request that may cost up to ` +
        `$${formatAmount(err.requiredUsd, 'USD')}.`,
      {
        details: {
          requiredBalance: toDisplayNumber(err.requiredUsd, 'USD'),
          availableBalance: toDisplayNumber(err.availableUsd, 'USD'),
          teamId: team.teamUuid,
        },
      },
    );
  }
}
