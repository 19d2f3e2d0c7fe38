// How the OpenAI-compatible vendors differ (activities/providers/openai/quirks.ts), alone: each
// vendor's row over the generic defaults, the catalog's options over both, and a wrong catalog
// value refused as the operator's mistake (500 provider_misconfigured, retryable).
import assert from 'node:assert/strict';
import { RequestError } from '../../activities/core/errors.js';
import { type OpenAIQuirks, quirksFor } from '../../activities/providers/openai/quirks.js';

const GENERIC: OpenAIQuirks = {
  maxTokensField: 'max_tokens',
  extendedSampling: false,
  reasoningStyle: 'reasoning_effort',
  streamUsage: true,
  sendUser: true,
  messageNames: true,
  promptEndpoint: 'completions',
  dropParams: [],
  vendorSampling: {},
};

describe('OpenAI-compatible vendor quirks', () => {
  describe('each vendor over the generic defaults', () => {
    const rows: Array<[string, Partial<OpenAIQuirks>]> = [
      ['an unknown server', {}],
      ['ollama', {}],
      ['openai', { maxTokensField: 'max_completion_tokens', promptEndpoint: 'chat' }],
      ['openrouter', { extendedSampling: true, reasoningStyle: 'openrouter' }],
      ['together', { extendedSampling: true }],
      ['deepinfra', { extendedSampling: true }],
      ['fireworks', { extendedSampling: true }],
      ['groq', { promptEndpoint: 'chat', messageNames: false, dropParams: ['logprobs', 'top_logprobs', 'logit_bias'] }],
    ];
    for (const [vendor, diff] of rows) {
      it(vendor, () => assert.deepEqual(quirksFor(vendor, {}), { ...GENERIC, ...diff }));
    }
    it("vllm passes vLLM's own sampling parameters under their names", () => {
      const q = quirksFor('vllm', {});
      assert.equal(q.extendedSampling, true);
      assert.deepEqual(q.vendorSampling, {
        min_tokens: 'min_tokens',
        stop_token_ids: 'stop_token_ids',
        include_stop_str_in_output: 'include_stop_str_in_output',
        ignore_eos: 'ignore_eos',
      });
    });
    it("llamacpp renames the completions surface's controls to llama.cpp's", () => {
      const q = quirksFor('llamacpp', {});
      assert.equal(q.vendorSampling.mirostat_mode, 'mirostat');
      assert.equal(q.vendorSampling.tfs, 'tfs_z');
      assert.equal(q.vendorSampling.min_tokens, undefined);
    });
  });

  describe("the catalog's options over the vendor's row", () => {
    const options: Array<[string, unknown, Partial<OpenAIQuirks>]> = [
      ['max_tokens_field', 'max_tokens', { maxTokensField: 'max_tokens' }],
      ['extended_sampling', false, { extendedSampling: false }],
      ['reasoning_style', 'none', { reasoningStyle: 'none' }],
      ['stream_usage', false, { streamUsage: false }],
      ['send_user', false, { sendUser: false }],
      ['message_names', false, { messageNames: false }],
      ['prompt_endpoint', 'completions', { promptEndpoint: 'completions' }],
      ['drop_params', ['temperature', 'top_p'], { dropParams: ['temperature', 'top_p'] }],
      ['vendor_sampling', { typical_p: 'typical' }, { vendorSampling: { typical_p: 'typical' } }],
      ['http_referer', 'https://gw.example', { httpReferer: 'https://gw.example' }],
      ['x_title', 'Gateway', { appTitle: 'Gateway' }],
    ];
    for (const [key, value, want] of options) {
      it(key, () => {
        const q = quirksFor('openrouter', { [key]: value });
        const base = quirksFor('openrouter', {});
        assert.deepEqual(q, { ...base, ...want });
      });
    }
    it('a null option keeps the default', () =>
      assert.equal(quirksFor('openai', { max_tokens_field: null }).maxTokensField, 'max_completion_tokens'));
    it('works the quirks out once per options object and vendor', () => {
      const options = { stream_usage: false };
      assert.equal(quirksFor('groq', options), quirksFor('groq', options));
      assert.notEqual(quirksFor('groq', options), quirksFor('together', options));
      assert.notEqual(quirksFor('groq', options), quirksFor('groq', { stream_usage: false }));
    });
  });

  describe('a wrong catalog value', () => {
    const wrong: Array<[string, unknown, RegExp]> = [
      ['max_tokens_field', 'max_output_tokens', /"max_tokens" or "max_completion_tokens"/],
      ['extended_sampling', 'yes', /true or false/],
      ['reasoning_style', 'anthropic', /"reasoning_effort", "openrouter" or "none"/],
      ['stream_usage', 1, /true or false/],
      ['prompt_endpoint', 'responses', /"completions" or "chat"/],
      ['drop_params', 'temperature', /a list of parameter names/],
      ['drop_params', ['temperature', 3], /a list of parameter names/],
      ['vendor_sampling', ['typical_p'], /a map of parameter name/],
      ['vendor_sampling', { typical_p: 1 }, /a map of parameter name/],
      ['http_referer', 42, /a URL/],
    ];
    for (const [key, value, what] of wrong) {
      it(`${key}: ${JSON.stringify(value)}`, () =>
        assert.throws(
          () => quirksFor('acme', { [key]: value }),
          (e: unknown) =>
            e instanceof RequestError &&
            e.status === 500 &&
            e.code === 'provider_misconfigured' &&
            e.retryable &&
            e.opts.providerId === 'acme' &&
            new RegExp(`catalog option "${key}" of provider acme must be`).test(e.opts.detail ?? '') &&
            what.test(e.opts.detail ?? ''),
        ));
    }
  });
});
