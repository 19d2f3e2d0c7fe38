// Stop sequences over streamed text, for providers whose stops the gateway enforces itself (the
// built-in local model; Gemini, whose API does not say which sequence stopped it). Text that
// could be the start of a stop sequence is held back until the next pieces settle it, so a stop
// sequence never reaches the caller, not even half of one; the text before it is released with
// its tokens' logprobs.
import type { TokenLogprob } from '../core/types.js';

/** Decoded output of one or more tokens (several when a character spans tokens). */
export interface Piece {
  text: string;
  logprobs: TokenLogprob[];
}

export class StopMatcher {
  private pending: Piece[] = [];

  constructor(private readonly stops: string[]) {}

  /**
   * Add a piece; returns what is safe to release, and the stop sequence that ended the text (the
   * one starting first; null while none has).
   */
  push(piece: Piece): { release: Piece[]; stopped: string | null } {
    if (this.stops.length === 0) return { release: [piece], stopped: null };
    this.pending.push(piece);
    const text = this.pending.map((p) => p.text).join('');
    let at = -1;
    let matched: string | null = null;
    for (const s of this.stops) {
      const i = text.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        matched = s;
      }
    }
    if (matched !== null) return { release: this.cut(at), stopped: matched };
    return { release: this.cut(text.length - this.heldBack(text), false), stopped: null };
  }

  /** The end of generation: whatever was held back is just text. */
  flush(): Piece[] {
    return this.pending.splice(0);
  }

  /** Length of the longest end of `text` that some stop sequence starts with. */
  private heldBack(text: string): number {
    let hold = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, text.length); k > hold; k--) {
        if (text.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    return hold;
  }

  /**
   * Release the pending text before `end`. At a stop (`partial` true) a piece straddling the stop
   * gives its text up to the stop and the rest is dropped; otherwise only whole pieces go out.
   */
  private cut(end: number, partial = true): Piece[] {
    const out: Piece[] = [];
    let start = 0;
    let i = 0;
    for (; i < this.pending.length; i++) {
      const p = this.pending[i];
      const pieceEnd = start + p.text.length;
      if (pieceEnd <= end) out.push(p);
      else {
        if (partial && start < end) out.push({ text: p.text.slice(0, end - start), logprobs: p.logprobs });
        break;
      }
      start = pieceEnd;
    }
    this.pending = partial ? [] : this.pending.slice(i);
    return out;
  }
}
