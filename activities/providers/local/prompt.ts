// From an InferenceRequest to the exact tokens the local model evaluates, and what stops it.
//
// - Legacy `prompt`: the text verbatim (text completion), after the model's BOS token if it wants one.
// - Messages, model WITH a chat template in its GGUF: the template renders the conversation
//   (node-llama-cpp resolves it to a chat wrapper) and its stop triggers end the answer.
// - Messages, model WITHOUT one (base models such as stories260K): plain text. The system text,
//   then each turn's text in order, joined by a blank line ("\n\n"), no role labels; the model
//   continues the last turn. A base model never saw "User:"/"Assistant:" markers and would
//   imitate them; a story model continues a story best when it reads like one. A conversation
//   ending with an assistant turn therefore continues that turn (prefill).
import { llamaLib } from './llama.js';
import type { ChatHistoryItem, Token } from 'node-llama-cpp';
import type { InferenceRequest, Message } from '../../core/types.js';
import { PROVIDER_ID } from './engine.js';
import type { LocalModel } from './engine.js';
import { upstreamError } from '../../core/errors.js';

export interface Prompt {
  tokens: Token[];
  /** text that ends the answer (the request's `stop`, plus the template's plain-text triggers); never part of the output */
  stopTexts: string[];
  /** token sequences that end the answer (the template's special-token triggers) */
  stopTokens: Token[][];
}

const unsupported = (what: string) =>
  upstreamError(`the local model cannot ${what}; use a model that supports it`, 400, false, {
    code: 'unsupported_by_model',
    providerId: PROVIDER_ID,
  });

/** Refuse what a local text model cannot do, before any work (the router normally filters these out earlier). */
export function assertSupported(req: InferenceRequest): void {
  if (req.tools?.length || (req.toolChoice && req.toolChoice !== 'none' && req.toolChoice !== 'auto'))
    throw unsupported('call tools');
  if (req.messages.some((m) => m.role === 'tool' || m.toolCalls?.length))
    throw unsupported('take tool calls or tool results');
  if (req.messages.some((m) => m.content.some((p) => p.type === 'image'))) throw unsupported('read images');
  if (req.messages.some((m) => m.content.some((p) => p.type === 'document'))) throw unsupported('read documents');
  if (req.responseFormat && req.responseFormat.type !== 'text')
    throw unsupported(`guarantee a ${req.responseFormat.type} response`);
}

const textOf = (m: Message): string => m.content.map((p) => (p.type === 'text' ? p.text : '')).join('');

/** The template-less rendering documented at the top of this file. */
function plainText(messages: Message[]): string {
  return messages
    .map(textOf)
    .filter((t) => t !== '')
    .join('\n\n');
}

function withBos(lm: LocalModel, tokens: Token[]): Token[] {
  const bos = lm.model.tokens.bos;
  return lm.model.tokens.shouldPrependBosToken && bos != null ? [bos, ...tokens] : tokens;
}

function templated(lm: LocalModel, messages: Message[]): Prompt {
  const history: ChatHistoryItem[] = messages.map((m): ChatHistoryItem => {
    if (m.role === 'system') return { type: 'system', text: textOf(m) };
    if (m.role === 'assistant') return { type: 'model', response: [textOf(m)] };
    return { type: 'user', text: textOf(m) };
  });
  // An open model turn at the end: the template's generation prompt (or the prefilled answer).
  if (history.at(-1)?.type !== 'model') history.push({ type: 'model', response: [] });
  const state = lm.chatWrapper!.generateContextState({ chatHistory: history });
  const stopTexts: string[] = [];
  const stopTokens: Token[][] = [];
  for (const trigger of state.stopGenerationTriggers) {
    const text = llamaLib().LlamaText(trigger);
    if (text.values.every((v) => typeof v === 'string')) stopTexts.push(text.toString());
    else stopTokens.push(text.tokenize(lm.model.tokenizer));
  }
  return {
    tokens: state.contextText.tokenize(lm.model.tokenizer),
    stopTexts: stopTexts.filter((s) => s !== ''),
    stopTokens,
  };
}

/** The tokens the model evaluates for this request, and its stop conditions. */
export function buildPrompt(lm: LocalModel, req: InferenceRequest): Prompt {
  const requestStops = (req.sampling.stop ?? []).filter((s) => s !== '');
  let prompt: Prompt;
  if (req.prompt !== undefined)
    prompt = { tokens: withBos(lm, lm.model.tokenize(req.prompt)), stopTexts: [], stopTokens: [] };
  else if (lm.chatWrapper) prompt = templated(lm, req.messages);
  else prompt = { tokens: withBos(lm, lm.model.tokenize(plainText(req.messages))), stopTexts: [], stopTokens: [] };
  prompt.stopTexts.push(...requestStops);
  if (prompt.tokens.length === 0) {
    throw upstreamError('the prompt is empty and this model has no start token to begin from', 400, false, {
      code: 'empty_prompt',
      providerId: PROVIDER_ID,
    });
  }
  return prompt;
}
