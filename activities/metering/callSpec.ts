// What a surface declares to the metered call (meteredCall.ts): who pays, which routes it may
// take, how to price the worst case on one, how to explain a shortfall, and how its money is held.
import type { Payer } from '../core/caller.js';
import type { Route } from '../catalog/catalog.js';

export interface MeteredCallSpec {
  caller: Payer;
  /** the request's id: the reservation's idempotency key, the charge's request id, the record's id */
  requestId: string;
  /** what the record calls this operation: 'chat', 'speech', 'video', … */
  surface: string;
  /** the catalog model id, for records and ledger reasons */
  modelId: string;
  /** the routes to try, in order (planned once, by activities/routing/planRoute.ts) */
  routes: Route[];
  /** the most this call can cost on a route, in nano-USD */
  worstCase(route: Route): bigint;
  /**
   * Why the balance does not cover the worst case, for the 402: `required` and `available` are
   * USD amounts as text. Say what the money is for and what the caller can change.
   */
  shortfall(required: string, available: string): string;
  /** a job's reservation must outlive the request that made it; unset for synchronous calls */
  holdTtlSeconds?: number;
  /**
   * May a synchronous call take its share of this process's credit lease (ledger/leases.ts)
   * instead of a hold of its own? Worth it where calls are many and small (text); the rest keep
   * one exact hold each, whose settlement reports the exact balance left.
   */
  creditLease?: boolean;
  /** the reservation's idempotency key (default `hold:<requestId>`) */
  holdKey?: string;
  /**
   * The call's answer is stored by `settleWith`, in the same statement as its charge (a batch
   * row): so even a job's call may pay from this process's credit lease, since no charge can be
   * left pending in memory when the process dies.
   */
  storesAnswer?: boolean;
  /** the caller asked for pay-as-you-go (`X-Billing-Mode`, completions' `billing_mode`) */
  forcePaygo?: boolean;
  /** the caller chose the provider (`X-Provider`, `provider: "id"`): billed pay-as-you-go (spec) */
  explicitProvider?: boolean;
}
