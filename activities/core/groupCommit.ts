// Group commit: many callers' small writes as one statement, with no added wait. The first
// callers of a key are written at once, alone (up to `inFlight` statements at a time); callers
// that come while those are in flight queue, and the moment one returns they all go out together
// in the next one. A quiet key costs one statement per caller as before; a busy one (a batch's
// rows finishing on many lanes) costs about one per round trip, however many callers that served. Each caller still waits for
// its own write, so nothing is acknowledged before it is stored.
// Keys keep apart what must not share a statement (one account's balance row, one batch's
// counters): two statements of different keys never wait on each other's locks in a cycle.

/** Writes `items` (all of one key) in one go; one outcome per item, in order. */
export type GroupWriter<I, O> = (key: string, items: I[]) => Promise<PromiseSettledResult<O>[]>;

interface Waiting<I, O> {
  item: I;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

export class GroupCommit<I, O> {
  private readonly queues = new Map<string, Waiting<I, O>[]>();
  /** statements of each key in flight */
  private readonly flying = new Map<string, number>();

  /**
   * `max`: the most items one statement carries (the rest go in the next). `inFlight`: statements
   * of one key at once; a caller that comes while all are busy waits for the first to return.
   */
  constructor(
    private readonly write: GroupWriter<I, O>,
    private readonly max = 256,
    private readonly inFlight = 2,
  ) {}

  submit(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const queue = this.queues.get(key);
      if (queue) queue.push({ item, resolve, reject });
      else this.queues.set(key, [{ item, resolve, reject }]);
      if ((this.flying.get(key) ?? 0) < this.inFlight) void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    this.flying.set(key, (this.flying.get(key) ?? 0) + 1);
    try {
      for (let queue = this.queues.get(key); queue?.length; queue = this.queues.get(key)) {
        const group = queue.splice(0, this.max);
        if (queue.length === 0) this.queues.delete(key);
        let outcomes: PromiseSettledResult<O>[];
        try {
          outcomes = await this.write(
            key,
            group.map((w) => w.item),
          );
        } catch (err) {
          outcomes = group.map(() => ({ status: 'rejected', reason: err }));
        }
        group.forEach((w, i) => {
          const o = outcomes[i];
          if (o?.status === 'fulfilled') w.resolve(o.value);
          else w.reject(o ? o.reason : new Error('group commit: no outcome for an item'));
        });
      }
    } finally {
      const left = (this.flying.get(key) ?? 1) - 1;
      if (left > 0) this.flying.set(key, left);
      else this.flying.delete(key);
    }
  }
}
