// Polling for something that happens in another process or later in this one (a workflow, an
// upstream seeing an abort, a cache eviction): the tests' one way to wait.

/** `fn()` until `ok` holds for its value (returned); past `ms`, a failure naming `what` and the last value. */
export async function until<T>(
  fn: () => Promise<T>,
  ok: (v: T) => unknown,
  ms = 30_000,
  what = 'condition',
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end)
      throw new Error(
        `timed out waiting for ${what}: ${JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x))}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}
