// Decision questions (POST /api/v1/decisions; spec "Decision question", wire-details "Decisions"):
// the family rules checked, each question turned into scoring rows, and the rows' option scores
// turned back into answers. Pure: no I/O, no model; decide.ts runs the rows.
//
// A scoring row is a prompt that lists lettered options `(A) … (B) …` and ends at the answer slot;
// the model's next-token scores of the valid letters are softmaxed with the model's calibration
// temperature. How each question becomes rows:
//   choice   one row, one letter per option; more options than letters (26) are scored option by
//            option instead, as yes/no rows whose fits are normalized (an isolated score's method);
//   score    isolated (default): each level its own yes/no row ("does this level fit?"), the fits
//            normalized; `isolated: false`: one row, one letter per level;
//   noul     one row over no/yes; the answer is P(yes).
import { RequestError } from '../core/errors.js';

/** A description: text, or a non-empty object or array (shown to the model as JSON). */
type Description = string | Record<string, unknown> | unknown[];

interface ChoiceQuestion {
  type: 'choice';
  instructions: Description;
  criteria: Record<string, Description | null>;
}
interface ScoreQuestion {
  type: 'score';
  instructions: Description;
  criteria: Description[];
  isolated?: boolean;
}
interface NoulQuestion {
  type: 'noul';
  instructions?: Description;
  criteria?: { true?: Description; false?: Description };
}
export type Question = ChoiceQuestion | ScoreQuestion | NoulQuestion;

/** How a model's family constrains its questions (spec, Decisions: model-family rules). */
export type Family = 'A' | 'other';

/** Option letters: one token each in every tokenizer we met, so one next-token score each. */
export const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** The most scoring rows one request may ask for (413 `too_many_questions` past it). */
const MAX_ROWS = 1024;
const MAX_CHOICE_OPTIONS = 255;
const SCORE_LEVELS = { min: 2, max: 10 };

/**
 * One scoring row. `body` is the prompt up to the options' end; the engine adds the answer slot
 * its protocol needs (activities/decisions/prompt.ts). `options` are the texts after the letters.
 */
export interface Row {
  body: string;
  options: string[];
}

/** A question's rows and how their scores become its answer. */
export interface QuestionPlan {
  name: string;
  question: Question;
  rows: Row[];
  /** 'options': one row whose letters are the answer's options; 'fits': a yes/no row per option */
  method: 'options' | 'fits';
}

const bad = (code: string, message: string, param: string) => new RequestError(400, code, message, { param });

const isDescription = (x: unknown): x is Description =>
  typeof x === 'string' ||
  (Array.isArray(x) && x.length > 0) ||
  (typeof x === 'object' && x !== null && !Array.isArray(x) && Object.keys(x).length > 0);

function checkDescription(x: unknown, param: string, what: string): void {
  if (!isDescription(x))
    throw bad(
      'invalid_parameter_value',
      `'${param}' (${what}) must be a string, a non-empty object or a non-empty array.`,
      param,
    );
}

/** Text as the model reads it: strings as they are, anything else as compact JSON. */
export const textOf = (x: Description): string => (typeof x === 'string' ? x : JSON.stringify(x));

/** Check one question against the spec and its model's family. */
function checkQuestion(name: string, q: Record<string, unknown>, family: Family): Question {
  const at = (field: string) => `questions.${name}.${field}`;
  const { type } = q;
  if (type !== 'choice' && type !== 'score' && type !== 'noul')
    throw bad(
      type === undefined ? 'missing_required_parameter' : 'invalid_parameter_value',
      `'${at('type')}' must be "choice", "score" or "noul".`,
      at('type'),
    );
  if (type !== 'score' && q.isolated !== undefined)
    throw bad('invalid_parameter_value', `'${at('isolated')}' applies to score questions only.`, at('isolated'));
  const instructionsOptional = type === 'noul' && family === 'A';
  if (q.instructions === undefined) {
    const described = (q.criteria as NoulQuestion['criteria'])?.true ?? (q.criteria as NoulQuestion['criteria'])?.false;
    if (!instructionsOptional || described === undefined)
      throw bad(
        'missing_required_parameter',
        instructionsOptional
          ? `Question '${name}' needs 'instructions', or a 'criteria.true' or 'criteria.false' that describes it.`
          : `Question '${name}' needs 'instructions'.`,
        at('instructions'),
      );
  } else checkDescription(q.instructions, at('instructions'), 'the question');

  if (type === 'choice') return checkChoice(q, family, at);
  if (type === 'score') return checkScore(q, family, at);
  return checkNoul(q, family, at);
}

/** A choice question's criteria: option labels to descriptions (or null). */
function checkChoice(q: Record<string, unknown>, family: Family, at: (field: string) => string): Question {
  const c = q.criteria;
  if (typeof c !== 'object' || c === null || Array.isArray(c) || Object.keys(c).length === 0)
    throw bad(
      c === undefined ? 'missing_required_parameter' : 'invalid_parameter_value',
      `'${at('criteria')}' must be a non-empty object of option label to description (or null).`,
      at('criteria'),
    );
  const labels = Object.keys(c);
  const min = family === 'A' ? 2 : 1;
  if (labels.length < min || labels.length > MAX_CHOICE_OPTIONS)
    throw bad(
      'invalid_parameter_value',
      `'${at('criteria')}' has ${labels.length} options; a choice takes ${min} to ${MAX_CHOICE_OPTIONS}.`,
      at('criteria'),
    );
  for (const label of labels) {
    const d = (c as Record<string, unknown>)[label];
    if (d !== null) checkDescription(d, at(`criteria.${label}`), `the option '${label}'`);
  }
  return { type: 'choice', instructions: q.instructions as Description, criteria: c as ChoiceQuestion['criteria'] };
}

/** A score question's criteria: the ordered level descriptions; `isolated` for family A only. */
function checkScore(q: Record<string, unknown>, family: Family, at: (field: string) => string): Question {
  const c = q.criteria;
  if (!Array.isArray(c) || c.length < SCORE_LEVELS.min || c.length > SCORE_LEVELS.max)
    throw bad(
      c === undefined ? 'missing_required_parameter' : 'invalid_parameter_value',
      `'${at('criteria')}' must be an array of ${SCORE_LEVELS.min} to ${SCORE_LEVELS.max} ordered level descriptions${
        Array.isArray(c) ? `; it has ${c.length}` : ''
      }.`,
      at('criteria'),
    );
  for (const [i, d] of c.entries()) checkDescription(d, `${at('criteria')}[${i}]`, `level ${i}`);
  if (q.isolated !== undefined && typeof q.isolated !== 'boolean')
    throw bad('invalid_parameter_value', `'${at('isolated')}' must be a boolean.`, at('isolated'));
  if (q.isolated !== undefined && family !== 'A')
    throw bad(
      'invalid_parameter_value',
      `'${at('isolated')}' applies to family A decision models only; this model scores the question as a whole.`,
      at('isolated'),
    );
  return { type: 'score', instructions: q.instructions as Description, criteria: c, isolated: q.isolated as boolean };
}

/** A noul question's criteria: what true and false mean (family A may describe one of them). */
function checkNoul(q: Record<string, unknown>, family: Family, at: (field: string) => string): Question {
  const c = q.criteria;
  if (c !== undefined) {
    if (typeof c !== 'object' || c === null || Array.isArray(c))
      throw bad(
        'invalid_parameter_value',
        `'${at('criteria')}' must be an object with 'true' and/or 'false'.`,
        at('criteria'),
      );
    const extra = Object.keys(c).find((k) => k !== 'true' && k !== 'false');
    if (extra)
      throw bad(
        'invalid_parameter_value',
        `'${at(`criteria.${extra}`)}': a noul's criteria are 'true' and 'false' only.`,
        at(`criteria.${extra}`),
      );
    const cc = c as { true?: unknown; false?: unknown };
    if (family !== 'A' && (cc.true === undefined || cc.false === undefined))
      throw bad(
        'invalid_parameter_value',
        `'${at('criteria')}' must describe both 'true' and 'false' for this model (only family A models take one of them).`,
        at('criteria'),
      );
    if (cc.true !== undefined) checkDescription(cc.true, at('criteria.true'), 'when it is true');
    if (cc.false !== undefined) checkDescription(cc.false, at('criteria.false'), 'when it is false');
  }
  return {
    type: 'noul',
    instructions: q.instructions as Description | undefined,
    criteria: c as NoulQuestion['criteria'],
  };
}

/** The prompt's shared part: the state, then the question. */
function head(state: unknown, instructions: Description | undefined, fallback: string): string {
  return `State:\n${typeof state === 'string' ? state : JSON.stringify(state)}\n\nQuestion: ${instructions === undefined ? fallback : textOf(instructions)}\n`;
}

const option = (label: string, d: Description | null | undefined) => (d == null ? label : `${label}: ${textOf(d)}`);
const yesNo = (body: string): Row => ({ body, options: ['no', 'yes'] });

/** A question's scoring rows. */
function rowsOf(name: string, q: Question, state: unknown): QuestionPlan {
  if (q.type === 'choice') {
    const labels = Object.keys(q.criteria);
    const top = head(state, q.instructions, '');
    if (labels.length <= LETTERS.length)
      return {
        name,
        question: q,
        method: 'options',
        rows: [{ body: top, options: labels.map((l) => option(l, q.criteria[l])) }],
      };
    return {
      name,
      question: q,
      method: 'fits',
      rows: labels.map((l) => yesNo(`${top}Does this option fit? ${option(l, q.criteria[l])}\n`)),
    };
  }
  if (q.type === 'score') {
    const top = head(state, q.instructions, '');
    const last = q.criteria.length - 1;
    if (q.isolated === false)
      return {
        name,
        question: q,
        method: 'options',
        rows: [{ body: top, options: q.criteria.map((d, i) => option(String(i), d)) }],
      };
    return {
      name,
      question: q,
      method: 'fits',
      rows: q.criteria.map((d, i) => yesNo(`${top}Does this level fit? Level ${i} of 0-${last}: ${textOf(d)}\n`)),
    };
  }
  const top = head(state, q.instructions, 'Does this hold?');
  return {
    name,
    question: q,
    method: 'options',
    rows: [{ body: top, options: [option('no', q.criteria?.false), option('yes', q.criteria?.true)] }],
  };
}

/**
 * Every question checked against its model's family and turned into rows, in the order asked.
 * More than MAX_ROWS rows in all is the spec's 413 `too_many_questions` (family A; for the others
 * each question is one row of a structured answer, and the same bound keeps the prompt sane).
 */
export function planQuestions(state: unknown, questions: Record<string, unknown>, family: Family): QuestionPlan[] {
  const names = Object.keys(questions);
  if (names.length === 0)
    throw bad('invalid_parameter_value', "'questions' must name at least one question.", 'questions');
  const plans: QuestionPlan[] = [];
  let rows = 0;
  for (const name of names) {
    const raw = questions[name];
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw bad('invalid_parameter_value', `'questions.${name}' must be an object.`, `questions.${name}`);
    const plan = rowsOf(name, checkQuestion(name, raw as Record<string, unknown>, family), state);
    rows += plan.rows.length;
    plans.push(plan);
  }
  if (rows > MAX_ROWS)
    throw new RequestError(
      413,
      'too_many_questions',
      `These questions make ${rows} scoring rows (a choice is one row, or one per option past ${LETTERS.length}; an isolated score one per level; a noul one); at most ${MAX_ROWS} per request. Split them over several requests, or send scores with isolated: false.`,
      { param: 'questions' },
    );
  return plans;
}

/** Probabilities from the letters' log scores: softmax at the calibration temperature. */
export function softmax(logprobs: readonly number[], temperature: number): number[] {
  const scaled = logprobs.map((x) => x / temperature);
  const max = Math.max(...scaled);
  const e = scaled.map((x) => Math.exp(x - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

/** One question's probabilities over its options, from its rows' letter log scores. */
function distribution(plan: QuestionPlan, rows: readonly number[][], temperature: number): number[] {
  if (plan.method === 'options') return softmax(rows[0], temperature);
  const fits = rows.map((r) => softmax(r, temperature)[1]);
  const sum = fits.reduce((a, b) => a + b, 0);
  return sum > 0 ? fits.map((f) => f / sum) : fits.map(() => 1 / fits.length);
}

export type Answer =
  | { type: 'choice'; choice: string; confidence: number; probabilities: Record<string, number> }
  | {
      type: 'score';
      score: number;
      confidence: number;
      legend: Record<string, Description>;
      probabilities: Record<string, number>;
    }
  | { type: 'noul'; noul: number };

/**
 * A question's answer from its probabilities. choice: the likeliest option, confidence its
 * probability. score: the expected level (sum of i * p_i), confidence 1 - variance / the largest
 * variance its levels allow (all mass on one level: 1; split evenly between the two ends: 0).
 */
export function answerOf(q: Question, p: readonly number[]): Answer {
  if (q.type === 'choice') {
    const labels = Object.keys(q.criteria);
    let best = 0;
    for (let i = 1; i < p.length; i++) if (p[i] > p[best]) best = i;
    return {
      type: 'choice',
      choice: labels[best],
      confidence: p[best],
      probabilities: Object.fromEntries(labels.map((l, i) => [l, p[i]])),
    };
  }
  if (q.type === 'score') {
    const mean = p.reduce((s, x, i) => s + i * x, 0);
    const variance = p.reduce((s, x, i) => s + x * (i - mean) ** 2, 0);
    const maxVariance = ((p.length - 1) / 2) ** 2;
    return {
      type: 'score',
      score: mean,
      confidence: Math.min(1, Math.max(0, 1 - variance / maxVariance)),
      legend: Object.fromEntries(q.criteria.map((d, i) => [String(i), d])),
      probabilities: Object.fromEntries(p.map((x, i) => [String(i), x])),
    };
  }
  return { type: 'noul', noul: p[1] };
}

/** Every question's answer from the log scores of its rows (rows in plan order, letters in option order). */
export function answersOf(
  plans: readonly QuestionPlan[],
  rowScores: readonly number[][],
  temperature: number,
): Record<string, Answer> {
  const answers: Record<string, Answer> = {};
  let at = 0;
  for (const plan of plans) {
    const rows = rowScores.slice(at, at + plan.rows.length);
    at += plan.rows.length;
    answers[plan.name] = answerOf(plan.question, distribution(plan, rows, temperature));
  }
  return answers;
}
