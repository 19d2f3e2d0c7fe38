import assert from 'node:assert/strict';
import { startApi } from './support/api.js';
import { loadCatalog } from '../activities/catalog/catalog.js';

describe('model catalog routes', () => {
  let api: Awaited<ReturnType<typeof startApi>>;
  const saved = { ...process.env };
  before(async () => (api = await startApi()));
  after(async () => {
    process.env = saved;
    await loadCatalog();
    await api.close();
  });
  const get = async (path: string) => {
    const res = await fetch(`${api.base}${path}`);
    return { status: res.status, body: await res.json() };
  };

  it('with no upstream keys lists the built-in local models only (decision, speech and chat)', async () => {
    for (const k of Object.keys(process.env))
      if (k.endsWith('_API_KEY') || k.endsWith('_BASE_URL')) delete process.env[k];
    await loadCatalog();
    const { status, body } = await get('/api/v1/models');
    assert.equal(status, 200);
    assert.equal(body.object, 'list');
    assert.deepEqual(
      body.data.map((m: { id: string }) => m.id),
      ['local/decider-260k', 'local/espeak', 'local/stories260k'],
    );
    assert.deepEqual(Object.keys(body.data[0]).sort(), ['created', 'id', 'object', 'owned_by']);
  });

  it('a provider with a key makes its models usable, also under /v1, with every detailed field', async () => {
    process.env.OPENAI_API_KEY = 'sk-test';
    await loadCatalog();
    const { body } = await get('/v1/models?detailed=true');
    const ids = body.data.map((m: { id: string }) => m.id);
    assert.ok(ids.includes('openai/gpt-4o-mini'));
    assert.ok(ids.includes('anthropic/claude-3-5-haiku') === false);
    assert.ok(!ids.includes('openai/text-embedding-3-small'), 'embedding models are listed separately');
    const m = body.data.find((x: { id: string }) => x.id === 'openai/gpt-4o-mini');
    for (const field of [
      'name',
      'description',
      'context_length',
      'max_output_tokens',
      'capabilities',
      'pricing',
      'architecture',
      'supported_endpoints',
      'supported_batch_endpoints',
      'supported_service_tiers',
      'category',
    ]) {
      assert.ok(field in m, field);
    }
    assert.deepEqual(Object.keys(m.capabilities).sort(), [
      'parallel_tool_calls',
      'pdf_upload',
      'reasoning',
      'structured_output',
      'tool_calling',
      'video_input',
      'vision',
    ]);
    // $0.15 upstream + 5% markup
    assert.deepEqual(m.pricing, { prompt: 0.1575, completion: 0.63, currency: 'USD', unit: 'per_million_tokens' });
    assert.deepEqual(m.architecture, { input_modalities: ['text', 'image'], output_modalities: ['text'] });
    assert.deepEqual(m.supported_service_tiers, []);
  });

  it('rejects a malformed query with a 400', async () => {
    const { status, body } = await get('/api/v1/models?detailed=perhaps');
    assert.equal(status, 400);
    assert.equal(body.error.code, 'invalid_parameter_value');
    assert.equal(body.error.param, 'detailed');
  });

  it('lists embedding models with zero_data_retention', async () => {
    process.env.OPENAI_API_KEY = 'sk-test';
    await loadCatalog();
    const { body } = await get('/api/v1/embedding-models');
    const small = body.data.find((m: { id: string }) => m.id === 'openai/text-embedding-3-small');
    assert.equal(small.zero_data_retention, false);
    assert.equal(small.dimensions, 1536);
    assert.equal(small.pricing.prompt, 0.021);
  });

  it('discovers providers, with the canonical id URL-encoded or not', async () => {
    process.env.DEEPINFRA_API_KEY = 'x';
    await loadCatalog();
    for (const path of [
      '/api/models/meta-llama%2Fllama-3.3-70b-instruct/providers',
      '/api/models/meta-llama/llama-3.3-70b-instruct/providers',
    ]) {
      const { status, body } = await get(path);
      assert.equal(status, 200, path);
      assert.equal(body.canonicalId, 'meta-llama/llama-3.3-70b-instruct');
      assert.equal(body.displayName, 'Llama 3.3 70B Instruct');
      assert.equal(body.supportsProviderSelection, true);
      assert.deepEqual(
        body.providers.map((p: { provider: string }) => p.provider),
        ['deepinfra', 'groq', 'together', 'fireworks', 'openrouter'],
      );
      const deepinfra = body.providers[0];
      assert.equal(deepinfra.available, true);
      assert.equal(body.providers[1].available, false);
      assert.equal(deepinfra.pricing.inputPer1kTokens, 0.0002415);
      assert.deepEqual(body.defaultPrice, deepinfra.pricing);
    }
    // aliases resolve to the canonical model
    assert.equal(
      (await get('/api/models/llama-3.3-70b-versatile/providers')).body.canonicalId,
      'meta-llama/llama-3.3-70b-instruct',
    );
  });

  it('unknown models are a 404 model_not_found', async () => {
    const { status, body } = await get('/api/models/nope%2Fnothing/providers');
    assert.equal(status, 404);
    assert.equal(body.error.code, 'model_not_found');
  });
});
