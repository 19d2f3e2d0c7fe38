// The add-ons a text request may ask for, in the order the pipeline (../pipeline.ts) runs each of
// their hooks. The order is the contract: a refusal earlier in the list is the one a caller sees;
// memory compresses before web search searches for what is sent; x402's quote is priced once the
// others have refused what it does not cover. A new add-on is a file and a line here.
import type { AddOn } from './addOn.js';
import { advisor } from './advisor.js';
import { memory } from './memory.js';
import { moderation } from './moderation.js';
import { questions } from './questions.js';
import { redaction } from './redaction.js';
import { webSearch } from './webSearch.js';
import { x402 } from './x402.js';

export const ADD_ONS: readonly AddOn[] = [questions, redaction, moderation, advisor, memory, webSearch, x402];
