// Who is asking and who pays: the caller a request resolves to (an API key or a session, the same
// shape either way, activities/accounts/), and the part of it a metered call needs. At the bottom
// of the layers so every room may name them.

/** How the caller's requests are billed (the database's `BillingMode`). */
type BillingMode = 'auto' | 'paygo' | 'subscription_only';
/** PII redaction when a request does not say (the database's `RedactionDefault`). */
type RedactionDefault = 'inherit' | 'always' | 'never';

/**
 * What a request knows about its caller after authentication, whether it came with an API key or
 * a session cookie (sessions.ts): routes see one shape and never ask which. A session has no key,
 * so no key restrictions (`keyId` and `keyPrefix` null, no daily caps); the account's restrictions
 * bind both.
 */
export interface Caller {
  /** null when the caller signed in with a session */
  keyId: string | null;
  accountId: string;
  keyPrefix: string | null;
  /** the user whose personal account this is (the spec's `sessionId`); null for accounts no person owns */
  userId: number | null;
  /**
   * The sign-in session row behind the request (sessions.ts), when it came with the session cookie.
   * Not the spec's `sessionId`, which names a user (`userId` here).
   */
  webSessionId?: string;
  dailyRequestLimit: number | null;
  dailyUsdLimit: bigint | null;
  /** account and key restrictions combined: allow-lists intersected, deny-lists joined */
  providerAllow: string[] | null;
  providerDeny: string[];
  zdrOnly: boolean;
  billingMode: BillingMode;
  /**
   * PII redaction when the request says nothing (no header, no suffix): the key's default, or the
   * account's when the key inherits it (README, PII redaction). Absent: inherit, which is off.
   */
  redaction?: RedactionDefault;
}

/**
 * Who pays: what the engine needs of a caller (a job's worker knows only this much). `userId`: the
 * person behind it, whose `bill_to_team` choice sends synchronous calls to their team (teamBudget.ts).
 */
export type Payer = Pick<Caller, 'accountId' | 'billingMode' | 'dailyUsdLimit'> & {
  keyId: string | null;
  userId?: number | null;
};
