// How a loopback writes a streamed body: whole frames, one write each (the default), or split at
// arbitrary byte boundaries, each piece written and flushed on its own, as a real network delivers
// a stream: a frame across two reads, a line cut before its end, "\r\n" and "\n\n" separators cut
// in half, a UTF-8 character cut between its bytes. A stream reader that only works on whole
// frames fails in this mode.
//
//   upstream.splitWrites({ seed: 7 });   // from now on; undefined goes back to whole frames
//   TEST_SPLIT_WRITES=7 npm test          // every loopback of the run starts split
import type http from 'node:http';

export interface SplitWrites {
  /** the pieces' sizes are pseudo-random, and the same for the same seed */
  seed: number;
  /** the largest piece, in bytes (default 16) */
  maxPiece?: number;
}

/** The mode a loopback starts in: whole frames, unless TEST_SPLIT_WRITES names a seed. */
export function defaultSplit(): SplitWrites | undefined {
  const seed = process.env.TEST_SPLIT_WRITES;
  return seed ? { seed: Number(seed) || 1 } : undefined;
}

export interface BodyWriter {
  write(chunk: string): Promise<void>;
  end(chunk?: string): Promise<void>;
}

/** A writer for `res` in the given mode (undefined: whole frames, written as given). */
export function bodyWriter(res: http.ServerResponse, split: SplitWrites | undefined): BodyWriter {
  if (!split) {
    return {
      write: async (chunk) => void res.write(chunk),
      end: async (chunk) => void res.end(chunk),
    };
  }
  const next = random(split.seed);
  const max = split.maxPiece ?? 16;
  const pieces = async (chunk: string) => {
    const bytes = Buffer.from(chunk);
    let from = 0;
    while (from < bytes.length && !res.destroyed) {
      let to = Math.min(bytes.length, from + 1 + Math.floor(next() * max));
      // cut every separator and every multi-byte character at least once
      for (let at = from + 1; at < to; at++) {
        if (isContinuation(bytes[at]) || (bytes[at] === LF && (bytes[at - 1] === CR || bytes[at - 1] === LF))) {
          to = at;
          break;
        }
      }
      // each piece flushed to the socket, then a turn of the event loop, so the reader gets it alone
      await new Promise<void>((resolve) => res.write(bytes.subarray(from, to), () => resolve()));
      await new Promise((resolve) => setImmediate(resolve));
      from = to;
    }
  };
  return {
    write: pieces,
    async end(chunk) {
      if (chunk) await pieces(chunk);
      res.end();
    },
  };
}

const CR = 0x0d;
const LF = 0x0a;
/** the second, third or fourth byte of a UTF-8 character */
const isContinuation = (b: number) => (b & 0xc0) === 0x80;

/** mulberry32: a small seeded generator, so a failing split can be replayed */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
