// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// What a pass-through answer shows the caller, shared by the surfaces that relay an upstream's
// own frames (chatPassthrough.ts, messagesPassthrough.ts): the upstream's bytes, with the model
// renamed to the one the caller asked for. The rename edits the text in place when it can find
// it, so the rest of the frame stays byte-for-byte what the upstream sent.

/**
 * `data` with its `model` (at the top level of `json`, or inside `json.message`) shown as
 * `model`, and `provider` (chat chunks carry it) written right after it.
 */
export function renamed(data: string, json: any, model: string, provider?: string): string {
  const upstream = json?.model ?? json?.message?.model;
  if (typeof upstream !== 'string' || (upstream === model && provider === undefined)) return safeData(data, json);
  if (provider === undefined || json.provider === undefined) {
    const edited = renamedText(data, upstream, { model, provider });
    if (edited !== undefined) return edited;
  }
  // spaced or multi-line JSON, or a provider field of its own: written anew
  const extra = provider === undefined ? {} : { provider };
  if (typeof json?.model === 'string') return JSON.stringify({ ...json, model, ...extra });
  return JSON.stringify({ ...json, message: { ...json.message, model } });
}

/** An SSE data payload must be one line to be written as one `data:` line. */
function safeData(data: string, json: unknown): string {
  return data.includes('\n') && json !== undefined ? JSON.stringify(json) : data;
}

/**
 * `data` with `"model":"<upstream>"` edited in its text, or undefined when that text is not there
 * (or the data spans lines). For data without a `provider` field of its own.
 */
function renamedText(data: string, upstream: unknown, to: { model: string; provider?: string }): string | undefined {
  return typeof upstream === 'string' ? new ModelRename(upstream, to).in(data) : undefined;
}

/**
 * renamedText for the frames of one stream: what to find and what to write in its place, made
 * once per upstream model name rather than once per frame.
 */
export class ModelRename {
  private readonly find: string;
  private readonly replacement: string;
  private readonly unchanged: boolean;

  constructor(
    readonly upstream: string,
    { model, provider }: { model: string; provider?: string },
  ) {
    this.find = `"model":${JSON.stringify(upstream)}`;
    const added = provider === undefined ? '' : `,"provider":${JSON.stringify(provider)}`;
    this.replacement = `"model":${JSON.stringify(model)}${added}`;
    this.unchanged = upstream === model && provider === undefined;
  }

  /** `data` renamed, or undefined when its model's text is not there (or the data spans lines). */
  in(data: string): string | undefined {
    if (data.includes('\n')) return undefined;
    if (this.unchanged) return data;
    const at = data.indexOf(this.find);
    if (at === -1) return undefined;
    return data.slice(0, at) + this.replacement + data.slice(at + this.find.length);
  }
}
