// A text request (chat, completions, messages, responses, talk-to-gpt), from its validated body to
// the answer written, through named stages; api/ only reads, admits and hands it over. The stages:
//   body        add-ons that take the whole request elsewhere (the `questions` format)
//   model       the model name resolved (suffixes included); add-ons checked that need only it
//   translate   the surface's codec makes the one internal request; X-Provider is honoured
//   translated  add-ons checked that need the internal request (memory, web search; x402 last,
//               which quotes the request or takes its payment)
//   prepare     in list order, each add-on changes the request (masking, first) and reserves its
//               own charge (memory, the search's fee), each given back if a later one fails
//   answer      an add-on (the advisor) or the surface's handler (handler.ts) plans, reserves,
//               calls and renders; the moderation preflight and the search run before the first call
//   deliver     every charge stands once the answer is written out
// Whatever fails once money moved, the caller gets the error instead of the answer, and every
// reservation and charge of the request is given back: an answer never received is not charged.
import type { TextBody } from '../core/types.js';
import { resolveModel } from '../catalog/resolve.js';
import type { AddOn, CheckPoint } from './addOns/addOn.js';
import { ADD_ONS } from './addOns/index.js';
import type { TextCodec, Translated } from './codec.js';
import type { Exchange } from './exchange.js';
import { answerText } from './handler.js';
import { TextRun } from './textRun.js';

type Active = Array<{ addOn: AddOn; state: unknown }>;
const NONE: Active = [];

const codeOf = (err: unknown) => (err as { code?: string }).code ?? 'error';

/**
 * The add-ons checked at `point` that the request asks for, appended to `active`. Synchronous
 * unless an add-on's check needs I/O (only for a request that asks for it): no promise per request.
 */
function check(run: TextRun, point: CheckPoint, active: Active, from = 0): Active | Promise<Active> {
  for (let i = from; i < ADD_ONS.length; i++) {
    const addOn = ADD_ONS[i];
    if (addOn.at !== point) continue;
    const state = addOn.check(run);
    if (state === undefined) continue;
    if (state instanceof Promise)
      return state.then((s) => check(run, point, s === undefined ? active : withAddOn(active, addOn, s), i + 1));
    active = withAddOn(active, addOn, state);
  }
  return active;
}

function withAddOn(active: Active, addOn: AddOn, state: unknown): Active {
  if (active === NONE) active = [];
  active.push({ addOn, state });
  return active;
}

export async function runText<T extends Translated>(codec: TextCodec<T>, ex: Exchange, body: TextBody): Promise<void> {
  const run = new TextRun(codec, ex, body);
  let taken = check(run as TextRun, 'body', NONE);
  if (taken instanceof Promise) taken = await taken;
  if (taken.length) return taken[0].addOn.answer!(run as TextRun, taken[0].state);

  const { model, name } = resolveModel(body.model);
  run.model = model;
  run.name = name;
  // the /api/v1thinking/ base path asks what `:thinking` asks, unless the name turns reasoning off
  if (ex.thinkingPath && name.reasoningEffort !== 'none') name.thinking = true;
  let active = check(run as TextRun, 'model', NONE);
  if (active instanceof Promise) active = await active;

  run.input = await codec.translate(run.body, model, name, ex);
  const provider = ex.header('x-provider').trim();
  if (provider) run.input.prefs.explicit = provider;
  active = check(run as TextRun, 'translated', active);
  if (active instanceof Promise) active = await active;

  if (active.length) await prepare(run as TextRun, active);
  try {
    let answerer: Active[number] | undefined;
    for (const a of active) if (a.addOn.answer) answerer = a;
    if (answerer) await answerer.addOn.answer!(run as TextRun, answerer.state);
    else await answerText(run);
  } catch (err) {
    throw await giveBack(run as TextRun, active, err);
  }
  for (const call of run.calls) ex.chargeOnDelivery(call.metered);
  for (const a of active) await a.addOn.deliver?.(run as TextRun, a.state);
}

/** The add-ons' changes and own charges, in list order; one that fails gives back those before it. */
async function prepare(run: TextRun, active: Active): Promise<void> {
  for (let i = 0; i < active.length; i++) {
    const { addOn, state } = active[i];
    try {
      if (addOn.apply) await addOn.apply(run, state);
      if (addOn.reserve) await addOn.reserve(run, state);
    } catch (err) {
      for (const before of active.slice(0, i)) await before.addOn.abandon?.(run, before.state, codeOf(err));
      throw err;
    }
  }
}

/** Every call and add-on of a failed request given back; the error the caller gets. */
async function giveBack(run: TextRun, active: Active, err: unknown): Promise<unknown> {
  const code = codeOf(err);
  const log = (e: unknown) => console.error(`[api] ${run.ex.requestId}: could not give back the money:`, e);
  for (const call of run.calls) await call.metered.abandon(code).catch(log);
  for (const { addOn, state } of active) await addOn.abandon?.(run, state, code).catch(log);
  let shown = err;
  for (const { addOn } of active) if (addOn.explain) shown = addOn.explain(run, shown);
  return shown;
}
