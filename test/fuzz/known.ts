// Defects already reported (issue 11) and being fixed on their own branches. A failure that is one
// of them is counted, by item, and does not fail the suite; anything else does. Each rule is as
// narrow as the defect (all of the failure's problems must be the defect's), so it cannot hide a
// second problem. When a fix is merged, delete its rule: the suite then holds the fix.
import type { Outcome } from './http.js';
import type { Case } from './routes.js';

export interface Sent {
  case: Case;
  /** what went over the wire, for the report */
  summary: string;
  /** the whole request as text (decoded path, headers, body): what an answer may echo */
  requestText: string;
  outcome: Outcome;
  problems: string[];
  /** the issue item this failure is a known instance of */
  known?: string;
}

interface Known {
  item: string;
  /** the request is of the kind the defect needs */
  when(s: Sent): boolean;
  /** every problem of the failure is one the defect causes */
  problems: RegExp;
}

// Every defect issue 11 named is fixed now (NUL: items 1-2, depth: item 3, 405/501 envelopes: item 7); a
// new one found before its fix lands goes here, as narrow as the defect.
const KNOWN: Known[] = [];

export function knownDefect(s: Sent): string | undefined {
  return KNOWN.find((k) => k.when(s) && s.problems.every((p) => k.problems.test(p)))?.item;
}
