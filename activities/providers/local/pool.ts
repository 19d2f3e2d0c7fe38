// The sequences of one model's context, lent to one request at a time. Requests beyond the
// number of sequences wait in arrival order; a waiter whose caller aborts leaves the queue at once.
import type { LlamaContextSequence, Token } from 'node-llama-cpp';

interface Waiter {
  prompt: readonly Token[];
  resolve: (seq: LlamaContextSequence) => void;
  reject: (err: unknown) => void;
}

export class SequencePool {
  private readonly free: LlamaContextSequence[];
  private readonly waiting: Waiter[] = [];
  private closed = false;

  constructor(sequences: LlamaContextSequence[]) {
    this.free = [...sequences];
  }

  /** sequences not lent right now */
  get available(): number {
    return this.free.length;
  }

  /** requests waiting for a sequence */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * A free sequence for this prompt: the one whose kept state shares the longest prefix with it,
   * so a repeated system prompt or conversation is not evaluated again.
   */
  acquire(prompt: readonly Token[], signal: AbortSignal): Promise<LlamaContextSequence> {
    if (this.closed) return Promise.reject(new Error('the local model was unloaded'));
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.free.length > 0) return Promise.resolve(this.take(prompt));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        prompt,
        resolve: (seq) => {
          signal.removeEventListener('abort', onAbort);
          resolve(seq);
        },
        reject,
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  release(seq: LlamaContextSequence): void {
    if (this.closed || seq.disposed) return;
    const next = this.waiting.shift();
    if (next) next.resolve(seq);
    else this.free.push(seq);
  }

  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.reject(new Error('the local model was unloaded'));
  }

  private take(prompt: readonly Token[]): LlamaContextSequence {
    let best = 0;
    let bestShared = -1;
    this.free.forEach((seq, i) => {
      const shared = seq.compareContextTokens(prompt as Token[]).firstDifferentIndex;
      if (shared > bestShared) {
        best = i;
        bestShared = shared;
      }
    });
    return this.free.splice(best, 1)[0];
  }
}
