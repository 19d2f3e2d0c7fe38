// Masking a request and restoring its reply. One Redactor per request: every piece of personal data
// it finds (detect.ts) becomes a placeholder such as [EMAIL_1], the same value the same placeholder
// wherever it appears in the request (so the model can still tell two people apart and refer back),
// and the reply gets the values back. Credentials become a label such as [REDACTED_API_KEY] that is
// never restored: the model has no business repeating a secret. A placeholder never collides with
// text the caller wrote (an index already present in the request is skipped).
import { RequestError } from '../core/errors.js';
import type { InferenceRequest, InferenceResult, Message, StreamEvent } from '../core/types.js';
import type { detect as Detect } from './detect.js';
import { type Category, CREDENTIALS, type PiiCategory } from './rules.js';

const PLACEHOLDER_NAME: Record<PiiCategory, string> = {
  email: 'EMAIL',
  phone: 'PHONE',
  ssn: 'SSN',
  card: 'CARD',
  ip: 'IP',
  address: 'ADDRESS',
  name: 'NAME',
  dob: 'DOB',
};
const LABEL: Record<string, string> = {
  api_key: '[REDACTED_API_KEY]',
  token: '[REDACTED_TOKEN]',
  private_key: '[REDACTED_PRIVATE_KEY]',
  password: '[REDACTED_PASSWORD]',
};
/** What a placeholder looks like, and the longest one (for holding back a stream's last characters). */
const PLACEHOLDER = /\[(?:EMAIL|PHONE|SSN|CARD|IP|ADDRESS|NAME|DOB)_\d{1,5}\]/g;
const PLACEHOLDER_PREFIX = /\[(?:[A-Z]{0,7}(?:_\d{0,5})?)?$/;

/** Values that are the same piece of data written differently share a placeholder. */
function sameValue(category: Category, value: string): string {
  if (category === 'email' || category === 'name' || category === 'address') return value.toLowerCase();
  if (category === 'phone' || category === 'card' || category === 'ssn') return value.replace(/\D/g, '');
  return value;
}

export interface RedactionCounts {
  /** pieces of personal data masked, by category */
  masked: Partial<Record<Category, number>>;
  /** credentials replaced by labels */
  credentials: number;
}

// The detectors (compromise's lexicon, @arcjet/redact's WebAssembly: together about 60 MB resident)
// are loaded by the first redacted request, not by every API process at start (README, Memory of
// one API process). The first load is not counted against a request's time budget.
let detector: Promise<typeof Detect> | undefined;
const loadDetector = () =>
  (detector ??= import('./detect.js').then(
    (m) => m.detect,
    (err) => {
      detector = undefined; // asked again by the next redacted request
      throw err;
    },
  ));

export class Redactor {
  private readonly byValue = new Map<string, string>();
  private readonly originals = new Map<string, string>();
  private readonly next = new Map<PiiCategory, number>();
  private readonly taken: string;
  readonly counts: RedactionCounts = { masked: {}, credentials: 0 };

  /**
   * `seen`: all the caller's text, so that no placeholder collides with something written there;
   * `deadline`: the time (ms since the epoch) by which masking must be done, or it fails.
   */
  constructor(
    seen: string,
    private readonly detect: typeof Detect,
    private readonly deadline = Number.POSITIVE_INFINITY,
  ) {
    this.taken = seen;
  }

  private placeholder(category: PiiCategory, value: string): string {
    const key = `${category}\u0000${sameValue(category, value)}`;
    const known = this.byValue.get(key);
    if (known) return known;
    let n = this.next.get(category) ?? 0;
    let p: string;
    do p = `[${PLACEHOLDER_NAME[category]}_${++n}]`;
    while (this.taken.includes(p));
    this.next.set(category, n);
    this.byValue.set(key, p);
    this.originals.set(p, value);
    this.counts.masked[category] = (this.counts.masked[category] ?? 0) + 1;
    return p;
  }

  /** `text` with its personal data masked and its credentials labelled. */
  async mask(text: string): Promise<string> {
    const spans = await this.detect(text);
    if (Date.now() > this.deadline) throw new Error('redaction ran past its time budget');
    let out = '';
    let last = 0;
    for (const s of spans) {
      out += text.slice(last, s.start);
      if (CREDENTIALS.has(s.category)) {
        out += LABEL[s.category];
        this.counts.credentials++;
      } else out += this.placeholder(s.category as PiiCategory, text.slice(s.start, s.end));
      last = s.end;
    }
    return out + text.slice(last);
  }

  /** Every string inside a JSON text masked (tool-call arguments), the JSON kept valid. */
  async maskJson(json: string): Promise<string> {
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch {
      return this.mask(json); // not JSON (a model's broken arguments): masked as text
    }
    const walk = async (v: unknown): Promise<unknown> => {
      if (typeof v === 'string') return this.mask(v);
      if (Array.isArray(v)) return Promise.all(v.map(walk));
      if (v && typeof v === 'object')
        return Object.fromEntries(await Promise.all(Object.entries(v).map(async ([k, x]) => [k, await walk(x)])));
      return v;
    };
    return JSON.stringify(await walk(value));
  }

  /**
   * The request as it may leave: every text the upstream would read, masked: the turns, their
   * authors' names, earlier tool calls' arguments, the tools' descriptions (and those inside their
   * parameter schemas), a JSON schema response format's descriptions, the prompt and the end-user
   * id. Images are not read.
   */
  async maskRequest<R extends MaskedFields>(req: R): Promise<R> {
    const messages: Message[] = [];
    for (const m of req.messages) {
      const content = [];
      for (const part of m.content)
        content.push(part.type === 'text' ? { ...part, text: await this.mask(part.text) } : part);
      const toolCalls = m.toolCalls
        ? await Promise.all(m.toolCalls.map(async (c) => ({ ...c, arguments: await this.maskJson(c.arguments) })))
        : undefined;
      messages.push({
        ...m,
        content,
        ...(toolCalls ? { toolCalls } : {}),
        ...(m.name === undefined ? {} : { name: await this.mask(m.name) }),
      });
    }
    const tools = req.tools
      ? await Promise.all(
          req.tools.map(async (t) => ({
            ...t,
            ...(t.description === undefined ? {} : { description: await this.mask(t.description) }),
            ...(t.parameters === undefined ? {} : { parameters: await this.maskDescriptions(t.parameters) }),
          })),
        )
      : undefined;
    const format = req.responseFormat?.type === 'json_schema' ? req.responseFormat : undefined;
    const responseFormat = format && {
      ...format,
      ...(format.description === undefined ? {} : { description: await this.mask(format.description) }),
      schema: await this.maskDescriptions(format.schema),
    };
    return {
      ...req,
      messages,
      ...(tools ? { tools } : {}),
      ...(responseFormat ? { responseFormat } : {}),
      ...(req.prompt === undefined ? {} : { prompt: await this.mask(req.prompt) }),
      ...(req.user === undefined ? {} : { user: await this.mask(req.user) }),
    };
  }

  /** A JSON schema with every `description` in it masked (the rest of it is structure, not prose). */
  private async maskDescriptions(schema: Record<string, unknown>): Promise<Record<string, unknown>> {
    const walk = async (v: unknown, key?: string): Promise<unknown> => {
      if (typeof v === 'string') return key === 'description' ? this.mask(v) : v;
      if (Array.isArray(v)) return Promise.all(v.map((x) => walk(x)));
      if (v && typeof v === 'object')
        return Object.fromEntries(await Promise.all(Object.entries(v).map(async ([k, x]) => [k, await walk(x, k)])));
      return v;
    };
    return (await walk(schema)) as Record<string, unknown>;
  }

  /** Placeholders in `text` turned back into the values; labels stay labels. */
  restore(text: string, encode: (v: string) => string = (v) => v): string {
    if (this.originals.size === 0) return text;
    return text.replace(PLACEHOLDER, (p) => {
      const v = this.originals.get(p);
      return v === undefined ? p : encode(v);
    });
  }

  /** A whole answer restored: its text, reasoning and tool-call arguments (JSON-escaped there). */
  restoreResult(r: InferenceResult): InferenceResult {
    return {
      ...r,
      content: this.restore(r.content),
      reasoning: r.reasoning === undefined ? undefined : this.restore(r.reasoning),
      toolCalls: r.toolCalls.map((c) => ({ ...c, arguments: this.restore(c.arguments, jsonEscaped) })),
    };
  }

  /**
   * A stream restored as it goes. A placeholder may arrive split across chunks ("[EMA", "IL_1]"),
   * so each channel (text, reasoning, each tool call) holds back a trailing "[" and what follows it
   * while it can still become a placeholder, and lets it go at the next chunk or at the end.
   */
  async *restoreStream(events: AsyncIterable<StreamEvent>): AsyncGenerator<StreamEvent> {
    const held = new Map<string, string>();
    const release = (channel: string, text: string, final: boolean): string => {
      const all = (held.get(channel) ?? '') + text;
      const cut = final ? all.length : heldBackFrom(all);
      held.set(channel, all.slice(cut));
      const encode = channel.startsWith('tool:') ? jsonEscaped : undefined;
      return this.restore(all.slice(0, cut), encode);
    };
    const flush = function* (): Generator<StreamEvent> {
      for (const channel of [...held.keys()]) {
        const text = release(channel, '', true);
        if (!text) continue;
        if (channel === 'text') yield { type: 'text', text };
        else if (channel === 'reasoning') yield { type: 'reasoning', text };
        else yield { type: 'tool_call', index: Number(channel.slice(5)), argumentsDelta: text };
      }
      held.clear();
    };
    for await (const e of events) {
      if (e.type === 'text' || e.type === 'reasoning') {
        const text = release(e.type, e.text, false);
        if (text) yield { ...e, text };
      } else if (e.type === 'tool_call') {
        const argumentsDelta = release(`tool:${e.index}`, e.argumentsDelta, false);
        if (argumentsDelta || e.id || e.name) yield { ...e, argumentsDelta };
      } else {
        yield* flush();
        yield e;
      }
    }
    yield* flush();
  }
}

/** Where the part of `text` that may still become a placeholder begins (text.length: none). */
function heldBackFrom(text: string): number {
  const open = text.lastIndexOf('[');
  if (open === -1 || text.length - open > 14) return text.length;
  return PLACEHOLDER_PREFIX.test(text.slice(open)) ? open : text.length;
}

const jsonEscaped = (v: string) => JSON.stringify(v).slice(1, -1);

/** The parts of a request that carry the caller's text. */
type MaskedFields = Pick<InferenceRequest, 'messages' | 'prompt'> &
  Partial<Pick<InferenceRequest, 'tools' | 'user' | 'responseFormat'>>;

/** Everything the caller wrote that the upstream will read, to keep placeholders from colliding with it. */
function allText(req: MaskedFields): string {
  const parts: string[] = [req.prompt ?? '', req.user ?? ''];
  for (const m of req.messages) {
    for (const p of m.content) if (p.type === 'text') parts.push(p.text);
    for (const c of m.toolCalls ?? []) parts.push(c.arguments);
    parts.push(m.name ?? '');
  }
  for (const t of req.tools ?? []) parts.push(t.description ?? '', JSON.stringify(t.parameters ?? {}));
  parts.push(JSON.stringify(req.responseFormat ?? {}));
  return parts.join('\n');
}

/**
 * Mask a request before it leaves, or refuse it: if detection fails or runs past its time budget,
 * the request does not go out unredacted (fail-closed). 503 `redaction_unavailable`.
 */
export async function redactRequest<R extends MaskedFields>(
  req: R,
  budgetMs: number,
): Promise<{ request: R; redactor: Redactor }> {
  try {
    const redactor = new Redactor(allText(req), await loadDetector(), Date.now() + budgetMs);
    return { request: await redactor.maskRequest(req), redactor };
  } catch (err) {
    console.error('[redaction] the request could not be redacted and was not sent:', (err as Error).message);
    throw new RequestError(
      503,
      'redaction_unavailable',
      'PII redaction could not be applied to this request, so it was not sent (redaction fails closed). ' +
        'Nothing was charged. Retry, send a shorter request, or turn redaction off to send it as it is.',
      { retryable: true },
    );
  }
}
