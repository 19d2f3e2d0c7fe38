// Conversation memory without a model: a long conversation compressed, deterministically, into one
// context that fits a share of the caller's context window (wire-details "Memory"). The same input
// always gives the same output. What it keeps, top to bottom:
//   - the system prompt(s), verbatim (cut at the end only if they alone would not fit);
//   - summaries of the older spans of the conversation, extractive: the sentences of each span
//     that best match the latest messages (and the conversation's own recurring words), in their
//     order; when there are more spans than the budget can summarise, neighbouring spans merge
//     into larger ones (the hierarchy: fewer, coarser summaries the longer the conversation);
//   - verbatim excerpts of the older turns most relevant to the latest messages;
//   - the most recent turns, verbatim (the last one always, cut in the middle if it must be).
// Tool-call noise is dropped: `tool` and `function` messages and assistants' `tool_calls`.
//
// Tokens are the gateway's documented estimate (no model runs, so there is no model tokenizer):
// 4 bytes of UTF-8 a token, rounded up, plus 4 a message for its framing. Counted per line, so
// the sum of what is kept bounds the whole.
import { createHash } from 'node:crypto';

export interface MemoryMessage {
  role: 'user' | 'assistant' | 'system' | 'tool' | 'function';
  content?: unknown;
}

/** A message the compressor read (tool noise excluded), by hash: what "seen before" means for billing. */
export interface Segment {
  hash: string;
  tokens: number;
}

export interface Compressed {
  content: string;
  /** tokens of the messages read (tool noise is not read, so not billed) */
  inputTokens: number;
  outputTokens: number;
  segments: Segment[];
}

/** Tokens of a text: 4 bytes a token, rounded up. */
const tokensOf = (text: string) => Math.ceil(Buffer.byteLength(text) / 4);
const PER_MESSAGE = 4;

/** The share of `model_context_limit` the memory may fill: the rest is for new turns and the answer. */
const budgetFor = (contextLimit: number) => Math.floor(contextLimit / 2);

interface Turn {
  /** 1-based position among the conversation's turns (what the summaries cite) */
  n: number;
  role: 'user' | 'assistant' | 'system';
  text: string;
}

/** A message's text: a string, or its text parts (images and other media are not text to remember). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content.trim();
  if (!Array.isArray(content)) return '';
  return content
    .map((p) =>
      p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string'
        ? (p as { text: string }).text
        : '',
    )
    .filter(Boolean)
    .join('\n')
    .trim();
}

const STOP = new Set(
  'the and for are but not you your with this that have from they will would there their what about which when were been has had was can could should into than then them these those our out its also just more some such only over very any all how who why may might must here shall ours yours'.split(
    ' ',
  ),
);

function words(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []).filter((w) => !STOP.has(w));
}

/** Sentences of a text (and its lines), without the empty ones. */
function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** `text` cut to about `tokens` tokens, keeping its start and end with an ellipsis between. */
function cutMiddle(text: string, tokens: number): string {
  const bytes = Math.max(0, tokens * 4 - 8);
  if (Buffer.byteLength(text) <= tokens * 4) return text;
  const chars = [...text];
  const half = Math.floor(bytes / 2 / 4); // in characters, at most 4 bytes each
  return `${chars.slice(0, half).join('')} … ${chars.slice(chars.length - half).join('')}`;
}

/** `text` cut to about `tokens` tokens at its end. */
function cutEnd(text: string, tokens: number): string {
  if (Buffer.byteLength(text) <= tokens * 4) return text;
  return `${[...text].slice(0, Math.max(0, Math.floor((tokens * 4 - 4) / 4))).join('')} …`;
}

/** How much a piece of text is about the query: its query words (weighted) and its recurring words, per √length. */
function relevance(text: string, query: Set<string>, frequent: Map<string, number>): number {
  const ws = words(text);
  if (ws.length === 0) return 0;
  let s = 0;
  for (const w of ws) s += (query.has(w) ? 3 : 0) + Math.min(frequent.get(w) ?? 0, 5) / 5;
  return s / Math.sqrt(ws.length);
}

/** A budgeted list of lines: each line costs its tokens (and its newline). */
class Lines {
  readonly lines: string[] = [];
  used = 0;
  constructor(readonly budget: number) {}
  cost = (line: string) => tokensOf(`${line}\n`);
  fits = (line: string) => this.used + this.cost(line) <= this.budget;
  add(line: string): boolean {
    if (!this.fits(line)) return false;
    this.lines.push(line);
    this.used += this.cost(line);
    return true;
  }
  get left(): number {
    return this.budget - this.used;
  }
}

const label = (t: Turn) => `[${t.n}] ${t.role}:`;

/** One summary line for a span of turns: its best sentences, in order, within `tokens`. */
function summarise(span: Turn[], tokens: number, query: Set<string>, frequent: Map<string, number>): string {
  const head = span.length === 1 ? `- turn ${span[0].n}:` : `- turns ${span[0].n}-${span.at(-1)!.n}:`;
  const candidates: Array<{ turn: number; i: number; role: string; s: string; score: number }> = [];
  span.forEach((t, turn) => {
    sentences(t.text).forEach((s, i) => {
      candidates.push({ turn, i, role: t.role, s, score: relevance(s, query, frequent) + (i === 0 ? 0.5 : 0) });
    });
  });
  const ranked = [...candidates].sort((a, b) => b.score - a.score || a.turn - b.turn || a.i - b.i);
  const chosen: typeof candidates = [];
  let used = tokensOf(`${head}\n`);
  for (const c of ranked) {
    const cost = tokensOf(` ${c.role}: ${c.s}`);
    if (used + cost > tokens) continue;
    chosen.push(c);
    used += cost;
  }
  if (chosen.length === 0) {
    const best = ranked[0];
    if (!best) return head;
    return `${head} ${best.role}: ${cutEnd(best.s, Math.max(1, tokens - tokensOf(`${head} ${best.role}: `) - 1))}`;
  }
  chosen.sort((a, b) => a.turn - b.turn || a.i - b.i);
  return `${head}${chosen.map((c) => ` ${c.role}: ${c.s}`).join('')}`;
}

/** Spans of about equal size, as many as the budget can give at least `minTokens` each. */
function spansOf(turns: Turn[], budget: number, minTokens: number): Turn[][] {
  if (turns.length === 0) return [];
  const count = Math.max(1, Math.min(Math.ceil(turns.length / 4), Math.floor(budget / minTokens)));
  const size = Math.ceil(turns.length / count);
  const spans: Turn[][] = [];
  for (let i = 0; i < turns.length; i += size) spans.push(turns.slice(i, i + size));
  return spans;
}

const hashOf = (t: { role: string; text: string }) => createHash('sha256').update(`${t.role}\0${t.text}`).digest('hex');

/** Compress `messages` to fit the memory budget of a `contextLimit`-token window. */
export function compress(messages: MemoryMessage[], contextLimit: number): Compressed {
  const budget = budgetFor(contextLimit);
  const read: Turn[] = [];
  for (const m of messages) {
    if (m.role === 'tool' || m.role === 'function') continue; // tool-call noise
    const text = textOf(m.content);
    if (text) read.push({ n: read.length + 1, role: m.role, text });
  }
  const segments = read.map((t) => ({ hash: hashOf(t), tokens: tokensOf(t.text) + PER_MESSAGE }));
  const inputTokens = segments.reduce((n, s) => n + s.tokens, 0);
  const system = read.filter((t) => t.role === 'system');
  const convo = read.filter((t) => t.role !== 'system');

  const out = new Lines(budget);
  out.add(`[Memory of an earlier conversation: ${read.length} messages, compressed by the gateway.]`);
  if (system.length) {
    out.add('## System');
    // the system prompt may fill at most half of the budget
    const systemText = system.map((t) => t.text).join('\n');
    out.add(cutEnd(systemText, Math.max(1, Math.floor(budget / 2) - 2)));
  }

  // Everything fits: the conversation as it was, minus the noise.
  const full = convo.map((t) => `${label(t)} ${t.text}`);
  if (full.reduce((n, l) => n + out.cost(l), out.cost('## Conversation')) <= out.left) {
    out.add('## Conversation');
    for (const l of full) out.add(l);
    return finish(out, inputTokens, segments);
  }

  // The latest turns, verbatim, with half of what is left (the last one always, cut if it must be).
  const recentBudget = Math.floor((out.left - out.cost('## Recent turns')) / 2);
  const recent: string[] = [];
  let recentUsed = 0;
  let first = convo.length;
  for (let i = convo.length - 1; i >= 0; i--) {
    let line = `${label(convo[i])} ${convo[i].text}`;
    if (recent.length === 0 && out.cost(line) > recentBudget) line = cutMiddle(line, Math.max(1, recentBudget - 1));
    if (recentUsed + out.cost(line) > recentBudget) break;
    recent.unshift(line);
    recentUsed += out.cost(line);
    first = i;
  }
  const older = convo.slice(0, first);
  const latestUser = [...convo]
    .reverse()
    .filter((t) => t.role === 'user')
    .slice(0, 2);
  const query = new Set(words(latestUser.map((t) => t.text).join(' ')));
  const frequent = new Map<string, number>();
  for (const t of older) for (const w of new Set(words(t.text))) frequent.set(w, (frequent.get(w) ?? 0) + 1);

  // Excerpts: the older turns most relevant to the latest messages, verbatim, within a fifth.
  const olderBudget = out.left - recentUsed - out.cost('## Recent turns');
  const excerptBudget = Math.floor(olderBudget / 5);
  const byRelevance = older
    .map((t) => ({ t, score: relevance(t.text, query, frequent) }))
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score || a.t.n - b.t.n);
  const excerpts: Turn[] = [];
  let excerptUsed = out.cost('## Relevant earlier excerpts');
  for (const { t } of byRelevance) {
    const cost = out.cost(`${label(t)} ${t.text}`);
    if (excerptUsed + cost > excerptBudget) continue;
    excerpts.push(t);
    excerptUsed += cost;
  }
  excerpts.sort((a, b) => a.n - b.n);

  // Summaries of the rest, span by span, in what remains.
  const rest = older.filter((t) => !excerpts.includes(t));
  const summaryBudget = olderBudget - (excerpts.length ? excerptUsed : 0) - out.cost('## Summary of earlier turns');
  const MIN_SPAN_TOKENS = 24;
  const spans = spansOf(rest, summaryBudget, MIN_SPAN_TOKENS);
  if (spans.length && summaryBudget >= MIN_SPAN_TOKENS) {
    out.add('## Summary of earlier turns');
    const each = Math.floor(summaryBudget / spans.length);
    for (const span of spans) out.add(summarise(span, each, query, frequent));
  }
  if (excerpts.length) {
    out.add('## Relevant earlier excerpts');
    for (const t of excerpts) out.add(`${label(t)} ${t.text}`);
  }
  out.add('## Recent turns');
  for (const l of recent) out.add(l);
  return finish(out, inputTokens, segments);
}

function finish(out: Lines, inputTokens: number, segments: Segment[]): Compressed {
  const content = out.lines.join('\n');
  return { content, inputTokens, outputTokens: tokensOf(content), segments };
}
