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
  // the frame's data lines so far, joined with "\n" as they come (no array per frame)
  let data: string | undefined;
  const flush = (): SseFrame | undefined => {
    if (data === undefined && event === undefined) return undefined;
    const frame = { event, data: data ?? '' };
    event = undefined;
    data = undefined;
    return frame;
  };
  const line = (raw: string): SseFrame | undefined => {
    if (raw === '') return flush();
    let field: string;
    let value: string;
    // the usual line, read without taking it apart
    if (raw.startsWith('data: ')) {
      field = 'data';
      value = raw.slice(6);
    } else {
      if (raw.startsWith(':')) return undefined;
      const colon = raw.indexOf(':');
      field = colon === -1 ? raw : raw.slice(0, colon);
      value = colon === -1 ? '' : raw.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
    }
    if (field === 'data') data = data === undefined ? value : `${data}\n${value}`;
    else if (field === 'event') event = value;
    return undefined;
  };
  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    const frames: SseFrame[] = [];
    // Lines are read from `at` on, and the buffer cut once per chunk, not once per line. A stream
    // without "\r" (the usual one) is searched for it once.
    let at = 0;
    let cr = buffer.indexOf('\r');
    for (;;) {
      if (cr !== -1 && cr < at) cr = buffer.indexOf('\r', at);
      const lf = buffer.indexOf('\n', at);
      const nl = cr !== -1 && (lf === -1 || cr < lf) ? cr : lf;
      if (nl === -1) break;
      // a lone "\r" at the end may be the first half of "\r\n": wait for the next chunk
      if (nl === cr && nl === buffer.length - 1) break;
      const frame = line(buffer.slice(at, nl));
      at = nl === cr && buffer.charCodeAt(nl + 1) === 10 ? nl + 2 : nl + 1;
      if (frame) frames.push(frame);
    }
    if (at > 0) buffer = buffer.slice(at);
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
