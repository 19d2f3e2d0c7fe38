// A JSON object read from a stream of bytes, one array field's items handed over one by one as each
// arrives whole: a batch create's `requests` (up to 200 MiB) never sits in memory at once, neither
// as text nor parsed. Only the boundaries are found here, byte by byte (strings, escapes, brackets);
// each item and each other field is then parsed by the same parser as whole bodies
// (@hapi/bourne over JSON.parse), so what is valid JSON, and what a value parses to, are exactly
// as they are for a body read whole. The body's limits on nesting and on the number of values
// (jsonShape.ts) are counted as the bytes pass, and the checks on text PostgreSQL cannot store run
// on each item (middleware/body.ts).
//
// Written here rather than taken from a streaming JSON library: those build every value token by
// token in JavaScript (several times slower than JSON.parse, and each its own reading of JSON),
// where finding where an item ends and letting JSON.parse read it keeps one parser for all bodies.
// Structural characters are ASCII and never occur inside a UTF-8 sequence, so bytes can be
// scanned without decoding them, and a chunk may end anywhere.
import bourne from '@hapi/bourne';
import { RequestError } from '../activities/core/errors.js';
import { type JsonLimits, tooComplexMessage } from './jsonShape.js';
import { refuseUnstorableText } from './middleware/body.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
/** Can a value start with this byte? (What follows is JSON.parse's to judge.) */
const startsValue = (c: number) => !isSpace(c) && c !== COMMA && c !== COLON && c !== CLOSE_OBJECT && c !== CLOSE_ARRAY;

/** What the object held besides the streamed array, and how many items that array had. */
export interface StreamedObject {
  fields: Record<string, unknown>;
  /** undefined when the field was absent or not an array (then `fields` holds what it was) */
  items: number | undefined;
}

/** Where the scanner is, between values (inside a value, a Capture finds its end). */
type Place = 'start' | 'key' | 'colon' | 'value' | 'afterField' | 'item' | 'afterItem' | 'end';

/** One value being collected: its bytes so far and how far into it the scan is. */
interface Capture {
  what: 'key' | 'field' | 'item';
  parts: Buffer[];
  /** brackets open inside the value */
  depth: number;
  inString: boolean;
  escaped: boolean;
  /** a number, true, false or null: ends at the first delimiter */
  scalar: boolean;
}

const notJson = (why: string) => new RequestError(400, 'invalid_json', `Request body is not valid JSON: ${why}`);

function parse(text: string, where: string): unknown {
  try {
    return bourne.parse(text, { protoAction: 'error' });
  } catch (err) {
    throw notJson(`${where}${(err as Error).message}`);
  }
}

/**
 * Reads a JSON object from `chunks`, calling `onItem` for each item of its `arrayKey` array in order
 * (the next bytes are not read until it has returned), and returns the object's other fields.
 */
export async function readStreamedObject(
  chunks: AsyncIterable<Buffer>,
  arrayKey: string,
  limits: JsonLimits,
  onItem: (item: unknown, index: number) => void | Promise<void>,
): Promise<StreamedObject> {
  const scanner = new ObjectScanner(arrayKey, limits);
  for await (const chunk of chunks) {
    scanner.feed(chunk);
    for (const [item, index] of scanner.ready.splice(0)) await onItem(item, index);
  }
  return scanner.end();
}

const unexpected = (c: number, at: number) =>
  notJson(
    `unexpected ${c < 0x20 || c > 0x7e ? `byte 0x${c.toString(16)}` : `'${String.fromCharCode(c)}'`} at byte ${at}.`,
  );

const begin = (what: Capture['what'], c: number): Capture => ({
  what,
  parts: [],
  depth: 0,
  inString: false,
  escaped: false,
  scalar: c !== QUOTE && c !== OPEN_OBJECT && c !== OPEN_ARRAY,
});

/** The scan's state across chunks: where it is, the value being collected, the counts so far. */
class ObjectScanner {
  readonly fields: Record<string, unknown> = {};
  /** items parsed from the chunks fed so far, not yet handed over */
  readonly ready: Array<[unknown, number]> = [];
  private items: number | undefined;
  private place: Place = 'start';
  private capture: Capture | undefined;
  private key = '';
  private keyText = '';
  private values = 0;
  private fieldCount = 0;
  /** bytes before the current chunk */
  private offset = 0;

  constructor(
    private readonly arrayKey: string,
    private readonly limits: JsonLimits,
  ) {}

  feed(buf: Buffer): void {
    for (let i = 0; i < buf.length; i++) {
      if (this.capture) {
        const end = this.scan(this.capture, buf, i);
        if (end < 0) {
          this.capture.parts.push(buf.subarray(i));
          break;
        }
        this.capture.parts.push(buf.subarray(i, end));
        const done = this.capture;
        this.capture = undefined;
        this.finish(done);
        i = end - 1;
      } else if (!isSpace(buf[i]!)) {
        this.step(buf[i]!, this.offset + i);
        if (this.capture) i--; // the capture reads its first byte itself
      }
    }
    this.offset += buf.length;
  }

  end(): StreamedObject {
    if (this.place !== 'end' && !(this.place === 'start' && this.offset === 0)) throw notJson('it ends early.');
    return { fields: this.fields, items: this.items };
  }

  private count(): void {
    if (++this.values > this.limits.maxValues)
      throw new RequestError(400, 'invalid_json', tooComplexMessage('values', this.limits));
  }

  /** One structural byte between values (`at`: its offset in the body). */
  private step(c: number, at: number): void {
    switch (this.place) {
      case 'start':
        if (c === OPEN_ARRAY) throw new RequestError(400, 'invalid_json', 'Request body must be a JSON object.');
        if (c !== OPEN_OBJECT) throw notJson('it must be a JSON object.');
        this.count();
        this.place = 'key';
        return;
      case 'key':
        // `}` closes only an empty object: after a comma another field must come
        if (c === CLOSE_OBJECT && this.fieldCount === 0) this.place = 'end';
        else if (c === QUOTE) this.capture = begin('key', c);
        else throw unexpected(c, at);
        return;
      case 'colon':
        if (c !== COLON) throw unexpected(c, at);
        this.place = 'value';
        return;
      case 'value':
        if (!startsValue(c)) throw unexpected(c, at);
        this.fieldCount++;
        if (this.key === this.arrayKey && c === OPEN_ARRAY) {
          this.count();
          this.items = 0;
          this.place = 'item';
        } else this.capture = begin('field', c);
        return;
      case 'item':
        // `]` closes only an empty array: after a comma another item must come
        if (c === CLOSE_ARRAY && this.items === 0) this.place = 'afterField';
        else if (startsValue(c)) this.capture = begin('item', c);
        else throw unexpected(c, at);
        return;
      case 'afterField':
      case 'afterItem': {
        const inArray = this.place === 'afterItem';
        if (c === COMMA) {
          this.count();
          this.place = inArray ? 'item' : 'key';
        } else if (c === (inArray ? CLOSE_ARRAY : CLOSE_OBJECT)) this.place = inArray ? 'afterField' : 'end';
        else throw unexpected(c, at);
        return;
      }
      case 'end':
        throw notJson(`unexpected data after the object at byte ${at}.`);
    }
  }

  /** The index just past the captured value's end in `buf` (from `i`), or -1 if it goes on. */
  private scan(cap: Capture, buf: Buffer, i: number): number {
    const base = cap.what === 'item' ? 2 : 1; // the object, and the array an item sits in
    for (; i < buf.length; i++) {
      const c = buf[i]!;
      if (cap.inString) {
        if (cap.escaped) cap.escaped = false;
        else if (c === BACKSLASH) cap.escaped = true;
        else if (c === QUOTE) {
          cap.inString = false;
          if (cap.depth === 0) return i + 1;
        }
      } else if (cap.scalar) {
        if (c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY || isSpace(c)) return i;
      } else if (c === QUOTE) cap.inString = true;
      else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (base + ++cap.depth > this.limits.maxDepth)
          throw new RequestError(400, 'invalid_json', tooComplexMessage('depth', this.limits));
        this.count();
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        if (--cap.depth === 0) return i + 1;
      } else if (c === COMMA) this.count();
    }
    return -1;
  }

  /** A whole key, field or item: parsed, checked and kept. */
  private finish(cap: Capture): void {
    const text = Buffer.concat(cap.parts).toString('utf8');
    const { arrayKey } = this;
    if (cap.what === 'key') {
      this.key = parse(text, 'a key: ') as string;
      this.keyText = text;
      if (this.key === '__proto__') throw notJson('Object contains forbidden prototype property');
      if (this.key === arrayKey && (this.items !== undefined || arrayKey in this.fields))
        throw notJson(`'${arrayKey}' is given twice.`);
      this.place = 'colon';
    } else if (cap.what === 'field') {
      const value = parse(text, '');
      refuseUnstorableText(this.keyText + text, { [this.key]: value });
      this.fields[this.key] = value;
      this.place = 'afterField';
    } else {
      const index = this.items!;
      const item = parse(text, `${arrayKey}[${index}]: `);
      refuseUnstorableText(text, item, `${arrayKey}[${index}]`);
      this.ready.push([item, index]);
      this.items = index + 1;
      this.place = 'afterItem';
    }
  }
}
