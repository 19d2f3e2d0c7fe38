// The text pipeline's add-ons, one by one, with fakes: who refuses what before anything is
// reserved, which add-ons a request turns on, and how their charges follow the answer's.
import assert from 'node:assert/strict';
import { ADD_ONS } from '../../activities/inference/addOns/index.js';
import { memory } from '../../activities/inference/addOns/memory.js';
import { moderation } from '../../activities/inference/addOns/moderation.js';
import { questions } from '../../activities/inference/addOns/questions.js';
import { redaction } from '../../activities/inference/addOns/redaction.js';
import { webSearch } from '../../activities/inference/addOns/webSearch.js';
import { x402 } from '../../activities/inference/addOns/x402.js';
import { RequestError } from '../../activities/core/errors.js';
import { caller, codec, FakeExchange, fakeMetered, textRun } from './fakes.js';

const refusedWith = (code: string, param?: string) => (err: unknown) => {
  assert.ok(err instanceof RequestError, String(err));
  assert.equal(err.code, code);
  if (param) assert.equal(err.opts?.param, param);
  return true;
};

describe('text add-ons (unit)', () => {
  it('run in the documented order: questions first, x402 last', () => {
    assert.deepEqual(
      ADD_ONS.map((a) => a.name),
      ['questions', 'redaction', 'moderation', 'advisor', 'memory', 'web search', 'x402'],
    );
    // memory before web search: the search is made from the compressed conversation
    assert.ok(ADD_ONS.indexOf(memory) < ADD_ONS.indexOf(webSearch));
  });

  it('a request that asks for nothing turns nothing on, synchronously', () => {
    const { run } = textRun({ codec: codec({ redaction: true, moderation: true, webSearch: true, x402: true }) });
    for (const addOn of ADD_ONS) {
      const state = addOn.check(run);
      assert.equal(state, undefined, addOn.name);
    }
  });

  describe('redaction', () => {
    it('refuses the :redaction suffix where the surface does not offer it', () => {
      const { run } = textRun({ name: 'openai/gpt-test:redaction' });
      assert.throws(() => redaction.check(run), refusedWith('invalid_parameter_value', 'model'));
    });
    it('is on by header, suffix or the caller default, and marks the run', () => {
      const offered = codec({ redaction: true });
      const byHeader = textRun({ codec: offered });
      byHeader.ex.headers.redaction = 'true';
      assert.equal(redaction.check(byHeader.run), true);
      assert.equal(byHeader.run.redact, true);
      assert.equal(redaction.check(textRun({ codec: offered, name: 'openai/gpt-test:redaction' }).run), true);
      const ex = new FakeExchange();
      ex.caller = caller({ redaction: 'always' });
      assert.equal(redaction.check(textRun({ codec: offered, ex }).run), true);
      // a header that says no overrides the default
      ex.headers.redaction = 'false';
      assert.equal(redaction.check(textRun({ codec: offered, ex }).run), undefined);
    });
    it('masks the request before it is sent and says so in a header', async function () {
      this.timeout(20_000); // the detectors load on first use
      const { run, ex } = textRun({ codec: codec({ redaction: true }) });
      run.input.request.messages = [
        { role: 'user', content: [{ type: 'text', text: 'mail me at jane.doe@example.com' }] },
      ];
      await redaction.apply!(run, true);
      const sent = JSON.stringify(run.input.request.messages);
      assert.ok(!sent.includes('jane.doe@example.com'), sent);
      assert.ok(run.redaction?.redactor);
      assert.match(ex.set.get('X-Redaction') ?? '', /^applied; pii=1; credentials=0$/);
    });
  });

  describe('moderation', () => {
    it('is off where not offered, and refused to a session or an x402 payer', () => {
      const ex = new FakeExchange();
      ex.headers.moderation = 'true';
      assert.equal(moderation.check(textRun({ ex }).run), undefined);
      const offered = codec({ moderation: true });
      ex.caller = caller({ keyId: null });
      assert.throws(
        () => moderation.check(textRun({ codec: offered, ex }).run),
        refusedWith('inline_moderation_requires_api_key', 'moderation'),
      );
      const paying = new FakeExchange();
      paying.headers.moderation = 'true';
      paying.x402 = {};
      assert.throws(
        () => moderation.check(textRun({ codec: offered, ex: paying }).run),
        refusedWith('inline_moderation_requires_api_key'),
      );
    });
    it('hands the calls a preflight to run before they send', () => {
      const { run } = textRun({ codec: codec({ moderation: true }) });
      moderation.apply!(run, 'omni-moderation-latest');
      assert.equal(typeof run.preflight, 'function');
    });
  });

  describe('x402', () => {
    it('covers neither :memory nor web search', () => {
      const ex = new FakeExchange();
      ex.x402 = {};
      assert.throws(
        () => x402.check(textRun({ ex, name: 'openai/gpt-test:memory' }).run),
        refusedWith('invalid_parameter_value', 'model'),
      );
      const { run } = textRun({ ex });
      run.web = { source: "'web_search'" } as never;
      assert.throws(() => x402.check(run), refusedWith('invalid_parameter_value', 'web_search'));
      assert.equal(x402.check(textRun().run), undefined);
    });
  });

  describe('web search', () => {
    it('is refused where the surface does not offer it, naming the suffix', () => {
      const { run } = textRun({ name: 'openai/gpt-test:online' });
      assert.throws(() => webSearch.check(run), refusedWith('invalid_parameter_value', 'model'));
    });
    it('the external search is made by the gateway; its charge follows the answer', async () => {
      const { run } = textRun({ codec: codec({ webSearch: true }), name: 'openai/gpt-test:online' });
      assert.equal(webSearch.check(run), 'external');
      assert.ok(run.web);
      // a search that never ran (no call was made) is released, not charged
      const unused = fakeMetered();
      run.search = { outcome: undefined, call: { metered: unused.metered } } as never;
      await webSearch.deliver!(run, 'external');
      assert.deepEqual(unused.seen, ['abandon:unused']);
    });
    it('a 402 after the search was reserved names both', () => {
      const { run } = textRun();
      const err = new RequestError(402, 'insufficient_balance', 'Insufficient balance: x');
      assert.equal(webSearch.explain!(run, err), err);
      run.search = {} as never;
      assert.equal((webSearch.explain!(run, err) as RequestError).code, 'both_balance_required');
    });
  });

  describe('memory', () => {
    it('is asked for by the suffix only, and charged with the answer', () => {
      assert.equal(memory.check(textRun({ name: 'openai/gpt-test:memory' }).run), true);
      assert.equal(memory.check(textRun().run), undefined);
      const { run, ex } = textRun();
      const m = fakeMetered();
      run.memory = m.metered;
      memory.deliver!(run, true);
      assert.deepEqual(ex.onDelivery, [m.metered]);
    });
    it('delivered at once when a stream already delivered the answer', () => {
      const { run, ex } = textRun();
      const answer = fakeMetered();
      (answer.metered as { isDelivered: boolean }).isDelivered = true;
      run.calls.push({ metered: answer.metered } as never);
      const m = fakeMetered();
      run.memory = m.metered;
      memory.deliver!(run, true);
      assert.deepEqual(m.seen, ['delivered']);
      assert.equal(ex.onDelivery.length, 0);
    });
  });

  describe('questions', () => {
    it("finds the surface's questions; a surface without the format has none", () => {
      const format = { find: (b: Record<string, unknown>) => b.q, decision: () => ({}) as never, render: () => ({}) };
      const { run } = textRun({ codec: codec({ questions: format }), body: { model: 'm', q: { a: 1 } } });
      assert.deepEqual(questions.check(run), { a: 1 });
      assert.equal(questions.check(textRun({ body: { model: 'm', q: 1 } }).run), undefined);
    });
  });
});
