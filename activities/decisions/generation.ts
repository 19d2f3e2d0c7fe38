// biome-ignore-all lint/suspicious/noExplicitAny: the model's JSON answer, read field by field
// Decision models that are not family A (general chat models) answer through a structured
// generation: one chat call whose JSON-schema output gives, for every question, a probability per
// option (a choice's labels, a score's levels, a noul's P(true)). The numbers are the model's own
// statement, not next-token scores: they are normalized (negatives count as 0; all zero = uniform)
// and no calibration temperature applies. The answer says which way it was made (decide.ts).
import type { InferenceRequest } from '../core/types.js';
import { upstreamError } from '../core/errors.js';
import { answerOf, type Answer, type QuestionPlan, textOf } from './questions.js';

const SYSTEM =
  'You answer decision questions about a state. For every question, give a probability for each of its ' +
  'options (a choice: each label; a score: each level, from level 0 up; a noul: the probability that it is true). ' +
  "One question's probabilities add up to 1. Answer with the JSON object only.";

/** The JSON schema of the answer: one property per question. */
function schemaOf(plans: readonly QuestionPlan[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const { name, question: q } of plans) {
    if (q.type === 'choice') {
      const labels = Object.keys(q.criteria);
      properties[name] = {
        type: 'object',
        properties: Object.fromEntries(labels.map((l) => [l, { type: 'number' }])),
        required: labels,
        additionalProperties: false,
      };
    } else if (q.type === 'score')
      properties[name] = {
        type: 'array',
        items: { type: 'number' },
        minItems: q.criteria.length,
        maxItems: q.criteria.length,
      };
    else properties[name] = { type: 'number' };
  }
  return { type: 'object', properties, required: plans.map((p) => p.name), additionalProperties: false };
}

/** The questions as the model reads them. */
function questionsText(plans: readonly QuestionPlan[]): string {
  return plans
    .map(({ name, question: q }) => {
      const instructions = q.instructions === undefined ? '' : ` ${textOf(q.instructions)}`;
      if (q.type === 'choice') {
        const options = Object.entries(q.criteria).map(([l, d]) => `  - ${l}${d == null ? '' : `: ${textOf(d)}`}`);
        return `${name} (choice):${instructions}\n${options.join('\n')}`;
      }
      if (q.type === 'score')
        return `${name} (score, levels 0-${q.criteria.length - 1}):${instructions}\n${q.criteria
          .map((d, i) => `  ${i}: ${textOf(d)}`)
          .join('\n')}`;
      const c = q.criteria;
      const when = [c?.true && `  true: ${textOf(c.true)}`, c?.false && `  false: ${textOf(c.false)}`].filter(Boolean);
      return `${name} (noul, probability that it is true):${instructions}${when.length ? `\n${when.join('\n')}` : ''}`;
    })
    .join('\n\n');
}

/** The user turn's text (also what the worst case is measured on). */
export function generationPrompt(state: unknown, plans: readonly QuestionPlan[]): { system: string; user: string } {
  const s = typeof state === 'string' ? state : JSON.stringify(state);
  return { system: SYSTEM, user: `State:\n${s}\n\nQuestions:\n${questionsText(plans)}` };
}

/** Output tokens one answer may need: about 12 a number, plus the JSON around them. */
function outputCap(plans: readonly QuestionPlan[]): number {
  let numbers = 0;
  for (const { question: q } of plans)
    numbers += q.type === 'choice' ? Object.keys(q.criteria).length : q.type === 'score' ? q.criteria.length : 1;
  return 64 + numbers * 16;
}

/** The chat request that asks for the answers (the upstream model name is the route's). */
export function generationRequest(model: string, state: unknown, plans: readonly QuestionPlan[]): InferenceRequest {
  const { system, user } = generationPrompt(state, plans);
  return {
    model,
    messages: [
      { role: 'system', content: [{ type: 'text', text: system }] },
      { role: 'user', content: [{ type: 'text', text: user }] },
    ],
    responseFormat: { type: 'json_schema', name: 'decision_answers', schema: schemaOf(plans), strict: true },
    maxTokens: outputCap(plans),
    sampling: { temperature: 0 },
  };
}

/** Probabilities that add up to 1 from what the model stated. */
function normalized(xs: readonly unknown[]): number[] {
  const v = xs.map((x) => (typeof x === 'number' && Number.isFinite(x) && x > 0 ? x : 0));
  const sum = v.reduce((a, b) => a + b, 0);
  return sum > 0 ? v.map((x) => x / sum) : v.map(() => 1 / v.length);
}

/** The answers from the model's JSON text; an answer that is not the asked shape is the route's failure (retryable). */
export function answersFromGeneration(
  providerId: string,
  text: string,
  plans: readonly QuestionPlan[],
): Record<string, Answer> {
  const bad = (why: string) =>
    upstreamError(`the structured decision answer ${why}`, 502, true, { code: 'upstream_bad_response', providerId });
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    throw bad('is not JSON');
  }
  if (typeof json !== 'object' || json === null) throw bad('is not an object');
  const answers: Record<string, Answer> = {};
  for (const { name, question: q } of plans) {
    const a = json[name];
    if (q.type === 'choice') {
      if (typeof a !== 'object' || a === null) throw bad(`has no probabilities for '${name}'`);
      answers[name] = answerOf(q, normalized(Object.keys(q.criteria).map((l) => a[l])));
    } else if (q.type === 'score') {
      if (!Array.isArray(a) || a.length !== q.criteria.length)
        throw bad(`has no ${q.criteria.length} levels for '${name}'`);
      answers[name] = answerOf(q, normalized(a));
    } else {
      if (typeof a !== 'number' || !Number.isFinite(a)) throw bad(`has no probability for '${name}'`);
      const p = Math.min(1, Math.max(0, a));
      answers[name] = answerOf(q, [1 - p, p]);
    }
  }
  return answers;
}
