// Model-name suffixes (activities/routing/suffixes.ts), alone: which tokens are peeled off a name,
// what each one sets, and which combinations are refused with the 400 that names the model field.
import assert from 'node:assert/strict';
import { RequestError } from '../../activities/core/errors.js';
import { type ModelName, parseModelName } from '../../activities/routing/suffixes.js';

// A catalog with ids that contain ':' themselves, as Ollama's do.
const MODELS = new Set(['gpt-4o-mini', 'llama3:8b', 'llama3:8b:online', 'qwen:thinking']);
const exists = (name: string) => MODELS.has(name);
const parse = (name: string) => parseModelName(name, exists);

/** What a parse set, without the fields it left out. */
function flags(m: ModelName): Omit<ModelName, 'base' | 'suffixes'> {
  const { base: _b, suffixes: _s, ...rest } = m;
  return rest;
}

function refused(name: string, message: RegExp): void {
  assert.throws(
    () => parse(name),
    (e: unknown) =>
      e instanceof RequestError &&
      e.status === 400 &&
      e.code === 'invalid_parameter_value' &&
      e.opts.param === 'model' &&
      message.test(e.message),
  );
}

describe('model-name suffixes', () => {
  describe('a name with no suffix', () => {
    for (const name of ['gpt-4o-mini', 'unknown-model', 'llama3:8b', 'qwen:thinking']) {
      it(`keeps "${name}" whole`, () => {
        const m = parse(name);
        assert.equal(m.base, name);
        assert.deepEqual(m.suffixes, []);
        assert.deepEqual(flags(m), {});
      });
    }
  });

  describe('each suffix and what it sets', () => {
    const cases: Array<[string, Omit<ModelName, 'base' | 'suffixes'>]> = [
      ['fast', { sort: 'throughput' }],
      ['speed', { sort: 'throughput' }],
      ['throughput', { sort: 'throughput' }],
      ['cheap', { sort: 'price' }],
      ['price', { sort: 'price' }],
      ['floor', { sort: 'price' }],
      ['latency', { sort: 'latency' }],
      ['tools', { requireTools: true }],
      ['caching', { requireCaching: true }],
      ['cache', { requireCaching: true }],
      ['cached', { requireCaching: true }],
      ['thinking', { thinking: true }],
      ['memory', { memory: true }],
      ['redaction', { redaction: true }],
      ['redacted', { redaction: true }],
      ['piiredaction', { redaction: true }],
      ['piiredacted', { redaction: true }],
      ['online', { online: { arg: undefined } }],
      ['online/linkup', { online: { arg: 'linkup' } }],
      ['online/native', { online: { arg: 'native' } }],
      ['reasoning-exclude', { reasoningExclude: true }],
      ['reasoning-effort/none', { reasoningEffort: 'none' }],
      ['reasoning-effort/low', { reasoningEffort: 'low' }],
      ['reasoning-effort/medium', { reasoningEffort: 'medium' }],
      ['reasoning-effort/high', { reasoningEffort: 'high' }],
      ['reasoning-effort/xhigh', { reasoningEffort: 'xhigh' }],
      ['reasoning-effort/max', { reasoningEffort: 'max' }],
    ];
    for (const [suffix, want] of cases) {
      it(`:${suffix}`, () => {
        const m = parse(`gpt-4o-mini:${suffix}`);
        assert.equal(m.base, 'gpt-4o-mini');
        assert.deepEqual(m.suffixes, [`:${suffix}`]);
        assert.deepEqual(flags(m), want);
      });
    }
  });

  describe('peeling', () => {
    it('reads suffixes case-insensitively and reports them in lower case', () => {
      const m = parse('gpt-4o-mini:CHEAP:Thinking');
      assert.deepEqual(m.suffixes, [':cheap', ':thinking']);
      assert.deepEqual(flags(m), { sort: 'price', thinking: true });
    });

    it('combines several suffixes, in any order', () => {
      const a = parse('gpt-4o-mini:tools:memory:online/tavily:reasoning-exclude');
      const b = parse('gpt-4o-mini:reasoning-exclude:online/tavily:memory:tools');
      assert.deepEqual(flags(a), flags(b));
      assert.deepEqual(flags(a), {
        requireTools: true,
        memory: true,
        online: { arg: 'tavily' },
        reasoningExclude: true,
      });
    });

    it('keeps a model id that contains a colon, and peels what follows it', () => {
      const m = parse('llama3:8b:cheap');
      assert.equal(m.base, 'llama3:8b');
      assert.deepEqual(m.suffixes, [':cheap']);
    });

    it('stops peeling where the rest is a catalog model, even if the token looks like a suffix', () => {
      // "llama3:8b:online" is a model of its own: its ":online" is part of the id, not web search
      const m = parse('llama3:8b:online');
      assert.equal(m.base, 'llama3:8b:online');
      assert.equal(m.online, undefined);
      const n = parse('qwen:thinking:memory');
      assert.equal(n.base, 'qwen:thinking');
      assert.deepEqual(flags(n), { memory: true });
    });

    it('stops at the first token from the end that is not a suffix', () => {
      const m = parse('acme:custom:cheap');
      assert.equal(m.base, 'acme:custom');
      assert.deepEqual(m.suffixes, [':cheap']);
      const n = parse('acme:cheap:custom');
      assert.equal(n.base, 'acme:cheap:custom', 'a suffix before a non-suffix is part of the name');
      assert.deepEqual(n.suffixes, []);
    });

    it('never peels the first token, even when it reads as a suffix', () => {
      const m = parse('cheap:fast');
      assert.equal(m.base, 'cheap');
      assert.deepEqual(m.suffixes, [':fast']);
    });

    it('allows the same sort twice, and two names of one sort', () => {
      assert.equal(parse('gpt-4o-mini:cheap:cheap').sort, 'price');
      assert.equal(parse('gpt-4o-mini:fast:throughput').sort, 'throughput');
      assert.equal(parse('gpt-4o-mini:online:online').online?.arg, undefined);
      assert.equal(parse('gpt-4o-mini:reasoning-effort/low:reasoning-effort/low').reasoningEffort, 'low');
    });

    it('leaves an unknown token at the end in the name (the catalog lookup reports it)', () => {
      const m = parse('gpt-4o-mini:turbo');
      assert.equal(m.base, 'gpt-4o-mini:turbo');
      assert.deepEqual(m.suffixes, []);
    });
  });

  describe('refusals', () => {
    it('two different sorts', () => refused('gpt-4o-mini:cheap:fast', /sort by price and by throughput/));
    it('a latency sort against a price sort', () => refused('gpt-4o-mini:latency:floor', /Conflicting routing/));
    it('two different :online suffixes', () => refused('gpt-4o-mini:online/linkup:online', /Two different :online/));
    it('two different web search providers', () =>
      refused('gpt-4o-mini:online/linkup:online/tavily', /Two different :online/));
    it('an unknown reasoning effort, listing the known ones', () =>
      refused('gpt-4o-mini:reasoning-effort/extreme', /not a reasoning effort; use one of none, low, medium/));
    it('two different reasoning efforts', () =>
      refused('gpt-4o-mini:reasoning-effort/low:reasoning-effort/high', /Two different reasoning efforts/));
    it(':thinking with no reasoning', () =>
      refused('gpt-4o-mini:thinking:reasoning-effort/none', /contradict each other/));
  });
});
