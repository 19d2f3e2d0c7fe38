// The `:memory` suffix: the conversation before the latest user turn is compressed first
// (activities/memory/memory.ts; a metered call of its own), and the compressed request is then
// translated, never passed through. Charged with the answer, given back with it.
import { withMemory } from '../../memory/memory.js';
import type { AddOn } from './addOn.js';

export const memory: AddOn<true> = {
  name: 'memory',
  at: 'translated',
  check: (run) => (run.name.memory ? true : undefined),
  async reserve(run) {
    const { ex, input } = run;
    const done = await withMemory(
      ex.caller,
      ex.requestId,
      input.request.messages,
      run.model.contextLength,
      ex.signal(),
    );
    if (!done) return;
    input.request.messages = done.messages;
    run.memory = done.call.metered;
    run.rewritten = true;
  },
  async abandon(run, _on, code) {
    await run.memory?.abandon(code);
  },
  deliver(run) {
    if (run.memory) run.deliverWithAnswer(run.memory);
  },
};
