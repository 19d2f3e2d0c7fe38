// Server-Sent Events from an upstream body: `event:` and `data:` lines, frames separated by a
// blank line, multi-line data joined with "\n", comments (":") skipped. Bytes are decoded as
// UTF-8 across chunk boundaries, so a character split between two chunks survives.
export interface SseFrame {
  event?: string;
  data: string;
}

/** The frames one at a time. */
export async function* parseSse(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseFrame> {
  for await (const frames of sseBatches(body)) for (const frame of frames) yield frame;
}

/**
 * The frames each body chunk completes, together: one asynchronous step per chunk instead of one
 * per frame (an upstream usually sends many frames in one packet), for the hottest readers.
 */
export async function* sseBatches(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseFrame[]> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event: string | undefined;
  let data: string[] = [];
  const flush = (): SseFrame | undefined => {
    if (data.length === 0 && event === undefined) return undefined;
    const frame = { event, data: data.join('\n') };
    event = undefined;
    data = [];
    return frame;
  };
  const line = (raw: string): SseFrame | undefined => {
    if (raw === '') return flush();
    if (raw.startsWith(':')) return undefined;
    const colon = raw.indexOf(':');
    const field = colon === -1 ? raw : raw.slice(0, colon);
    let value = colon === -1 ? '' : raw.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    return undefined;
  };
  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    const frames: SseFrame[] = [];
    let nl: number;
    // biome-ignore lint/suspicious/noAssignInExpressions: the usual loop over the lines in a buffer
    while ((nl = buffer.search(/\r\n|\r|\n/)) !== -1) {
      // a lone "\r" at the end may be the first half of "\r\n": wait for the next chunk
      if (buffer[nl] === '\r' && nl === buffer.length - 1) break;
      const raw = buffer.slice(0, nl);
      buffer = buffer.slice(buffer[nl] === '\r' && buffer[nl + 1] === '\n' ? nl + 2 : nl + 1);
      const frame = line(raw);
      if (frame) frames.push(frame);
    }
    if (frames.length) yield frames;
  }
  buffer += decoder.decode();
  const rest: SseFrame[] = [];
  // the end of the body ends the last line, also one whose "\r" was waiting for a "\n"
  if (buffer) {
    for (const raw of buffer.split(/\r\n|\r|\n/)) {
      const frame = line(raw);
      if (frame) rest.push(frame);
    }
  }
  const last = flush();
  if (last) rest.push(last);
  if (rest.length) yield rest;
}

/**
 * The JSON string whose text starts at `start` in `data` (just past its opening quote): its value
 * and the index of its closing quote, read without parsing the rest of `data`; undefined when it
 * does not end or is not a valid JSON string. For the pass-through relays' plain text frames.
 */
export function jsonStringAt(data: string, start: number): { text: string; end: number } | undefined {
  // the string's end: the first quote not escaped (an odd run of backslashes before it escapes it)
  let end = data.indexOf('"', start);
  for (;;) {
    if (end === -1) return undefined;
    let slashes = 0;
    while (data.charCodeAt(end - 1 - slashes) === 92) slashes++;
    if (slashes % 2 === 0) break;
    end = data.indexOf('"', end + 1);
  }
  const raw = data.slice(start, end);
  if (!raw.includes('\\')) return { text: raw, end };
  try {
    return { text: JSON.parse(`"${raw}"`) as string, end };
  } catch {
    return undefined;
  }
}
