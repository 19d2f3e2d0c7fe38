// The contract of a text request's add-on (redaction, memory, web search, moderation, the advisor,
// the `questions` format, x402 payment): each is one file implementing the hooks it needs, and the
// pipeline (../pipeline.ts) runs the list (index.ts) hook by hook. Adding one is a new file and a
// line in the list. Every hook is optional except `check`; an add-on the request does not ask for
// costs one synchronous `check` that answers undefined.
import type { TextRun } from '../textRun.js';

/** When an add-on's `check` runs: on the bare body, once the model is known, or once translated. */
export type CheckPoint = 'body' | 'model' | 'translated';

export interface AddOn<S = unknown> {
  readonly name: string;
  readonly at: CheckPoint;
  /**
   * Before anything is reserved or sent: the add-on's state when this request asks for it
   * (undefined: it does not), or a refusal (throws). Synchronous unless the check needs I/O,
   * and then only for a request that asks for the add-on.
   */
  check(run: TextRun): S | undefined | Promise<S | undefined>;
  /** Changes the request before the add-ons after it in the list read it (masking). */
  apply?(run: TextRun, state: S): Promise<void> | void;
  /** Its own charge, reserved or run before the answer (memory, the search's fee). */
  reserve?(run: TextRun, state: S): Promise<void>;
  /** Answers the request instead of the surface (a decision model, the advisor's phases). */
  answer?(run: TextRun, state: S): Promise<void>;
  /** The answer failed or never reached the caller: give back what the add-on holds. */
  abandon?(run: TextRun, state: S, code: string): Promise<void>;
  /** The error the caller gets instead of `err` (a 402 that names what the balance could not pay). */
  explain?(run: TextRun, err: unknown): unknown;
  /** The answer was written: what the add-on charged stands with it. */
  deliver?(run: TextRun, state: S): Promise<void> | void;
}
