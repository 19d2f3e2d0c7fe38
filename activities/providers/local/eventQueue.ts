// A push queue read as an async iterator: the generation pushes events as llama.cpp produces
// them, the stream's reader pulls them at its own pace. A failure is thrown at the reader's next
// pull, after the events that came before it; an abort is thrown at once.
export class EventQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private ended = false;
  private error: unknown = undefined;
  private wake: (() => void) | undefined;

  push(item: T): void {
    this.items.push(item);
    this.notify();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.notify();
  }

  fail(err: unknown): void {
    if (this.ended) return;
    this.error = err ?? new Error('the local generation failed');
    this.ended = true;
    this.notify();
  }

  /** The reader gave up: what is still queued will never be wanted, fail at the next pull. */
  abort(err: unknown): void {
    this.items.length = 0;
    this.ended = false;
    this.fail(err);
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      if (this.items.length > 0) {
        yield this.items.shift()!;
        continue;
      }
      if (this.error !== undefined) throw this.error;
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }
}
