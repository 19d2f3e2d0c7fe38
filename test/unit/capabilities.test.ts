// Vendor differences are capabilities the registry answers, not names compared at call sites:
// availability (the catalog's `available` and the setting named when nothing is), token counting
// (count_tokens) and attestation (what makes a model a TEE model). No database, no network.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ModelInfo, Route } from '../../activities/catalog/catalog.js';
import type { CatalogFileProvider } from '../../activities/catalog/file.js';
import { providerAvailable, routeAvailable, settingToEnable } from '../../activities/providers/availability.js';
import { capability, optionalCapability, targetFor } from '../../activities/providers/registry.js';
import type { RouteSetup } from '../../activities/providers/types.js';
import { attestingRoute, isTeeModel } from '../../activities/tee/tee.js';

const provider = (id: string, protocol: string, options: Record<string, unknown> = {}): CatalogFileProvider => ({
  id,
  name: id,
  protocol,
  baseUrl: null,
  zeroDataRetention: false,
  options,
});

const setup = (p: CatalogFileProvider, more: Partial<RouteSetup> = {}): RouteSetup => ({
  provider: p,
  settings: {},
  upstreamModel: 'some-model',
  options: {},
  ...more,
});

/** A route as the registry reads it: its provider (protocol and id), settings, options, whether it is usable. */
const routeOf = (protocol: string, available = true) =>
  ({
    id: `m@${protocol}`,
    provider: provider(protocol, protocol),
    available,
    settings: {},
    options: {},
  }) as unknown as Route;

describe('provider capabilities (the registry, not vendor names)', () => {
  describe('availability', () => {
    it('an upstream over the network is available once its API key is set', () => {
      const p = provider('acme', 'openai');
      assert.equal(providerAvailable(p, {}), false);
      assert.equal(providerAvailable(p, { baseUrl: 'http://127.0.0.1:1' }), false, 'a base URL is not a key');
      assert.equal(providerAvailable(p, { apiKey: 'k' }), true);
      assert.equal(routeAvailable(setup(p)), false);
      assert.equal(routeAvailable(setup(p, { settings: { apiKey: 'k' } })), true);
      assert.equal(settingToEnable(setup(p)), 'ACME_API_KEY');
    });

    it('a keyless server is available once its base URL is set', () => {
      const p = provider('my-vllm', 'openai', { keyless: true });
      assert.equal(providerAvailable(p, { apiKey: 'k' }), false);
      assert.equal(providerAvailable(p, { baseUrl: 'http://127.0.0.1:1' }), true);
      assert.equal(routeAvailable(setup(p, { settings: { baseUrl: 'http://127.0.0.1:1' } })), true);
      assert.equal(settingToEnable(setup(p)), 'MY_VLLM_BASE_URL');
    });

    it('the local provider needs no setting, and a route of it its model file (a built-in engine none)', () => {
      const p = provider('local', 'local');
      const dir = mkdtempSync(path.join(tmpdir(), 'models-'));
      const saved = process.env.LOCAL_MODELS_DIR;
      process.env.LOCAL_MODELS_DIR = dir;
      try {
        assert.equal(providerAvailable(p, {}), true);
        const route = setup(p, { upstreamModel: 'tiny-model.gguf' });
        assert.equal(routeAvailable(route), false, 'no file yet');
        assert.equal(settingToEnable(route), 'the model file tiny-model.gguf (npm run models:fetch)');
        writeFileSync(path.join(dir, 'tiny-model.gguf'), 'GGUF');
        assert.equal(routeAvailable(route), true);
        assert.equal(routeAvailable(setup(p, { upstreamModel: 'espeak-ng', options: { builtin: true } })), true);
      } finally {
        if (saved === undefined) delete process.env.LOCAL_MODELS_DIR;
        else process.env.LOCAL_MODELS_DIR = saved;
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('a protocol the gateway does not know follows the upstream rule (the catalog file refuses it anyway)', () => {
      assert.equal(providerAvailable(provider('odd', 'carrier-pigeon'), { apiKey: 'k' }), true);
    });
  });

  describe('optional capabilities', () => {
    it('token counting: the local tokenizer and Anthropic have one, an OpenAI-style upstream does not', () => {
      assert.ok(optionalCapability(routeOf('local'), 'tokenCount'));
      assert.ok(optionalCapability(routeOf('anthropic'), 'tokenCount'));
      assert.equal(optionalCapability(routeOf('openai'), 'tokenCount'), undefined);
      assert.equal(optionalCapability(routeOf('carrier-pigeon'), 'tokenCount'), undefined);
    });

    it("Anthropic's counter answers nothing without a key (the estimate answers), never calling out", async () => {
      const counter = optionalCapability(routeOf('anthropic'), 'tokenCount')!;
      const target = { providerId: 'anthropic', baseUrl: 'http://127.0.0.1:1', options: {} };
      const req = { model: 'claude', messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 1 };
      assert.equal(await counter.count(req as never, target, AbortSignal.timeout(1000)), undefined);
      // with a key but nobody listening: the upstream's failure is no count either, not an error
      const keyed = { ...target, apiKey: 'k' };
      assert.equal(await counter.count(req as never, keyed, AbortSignal.timeout(5000)), undefined);
    });

    it("a caller's header goes only to the upstreams whose chat adapter understands it (anthropic-beta)", () => {
      const caller = { 'anthropic-beta': 'files-api-2025-04-14' };
      assert.deepEqual(targetFor(routeOf('anthropic'), caller).headers, caller);
      assert.equal(targetFor(routeOf('openai'), caller).headers, undefined);
      assert.equal(targetFor(routeOf('openai-tee'), caller).headers, undefined);
      assert.equal(targetFor(routeOf('anthropic'), { 'x-other': '1' }).headers, undefined);
      assert.equal(targetFor(routeOf('anthropic')).headers, undefined);
    });

    it('a capability a route must have and lacks is a catalog mistake (500, not retried)', () => {
      assert.throws(
        () => capability(routeOf('anthropic'), 'video'),
        (e: { status?: number; retryable?: boolean }) => e.status === 500,
      );
    });
  });

  describe('TEE models: served by a provider that attests', () => {
    const model = (id: string, routes: Route[]) => ({ id, routes }) as unknown as ModelInfo;

    it('a model is a TEE model when a route of it attests, whatever its name', () => {
      assert.equal(isTeeModel(model('TEE/llama', [routeOf('openai-tee')])), true);
      assert.equal(isTeeModel(model('acme/llama', [routeOf('openai'), routeOf('openai-tee')])), true);
      assert.equal(isTeeModel(model('TEE/not-really', [routeOf('openai')])), false);
      assert.equal(isTeeModel(model('TEE/no-routes', [])), false);
    });

    it('the attesting route is the first usable one that attests; a model without one is refused (400)', () => {
      const usable = routeOf('openai-tee');
      assert.equal(attestingRoute(model('x', [routeOf('openai'), routeOf('openai-tee', false), usable])), usable);
      assert.throws(
        () => attestingRoute(model('acme/plain', [routeOf('openai')])),
        (e: { status?: number; code?: string }) => e.status === 400 && e.code === 'invalid_parameter_value',
      );
    });
  });
});
