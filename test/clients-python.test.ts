// Python clients, by base URL only: the official `openai` and `anthropic` SDKs and LiteLLM as a
// client (`openai/…` with api_base, its built-in `nano-gpt` provider, `anthropic/…`), run by
// test/clients/python_clients.py in the project's .venv against a gateway started here. The
// packages are installed into .venv on first use (PyPI is reachable in CI); each check is a row of
// the README's compatibility table.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { newAccount, startApi } from './support/api.js';
import { assertBooksBalance } from './support/books.js';
import { compat, saveCompatReport } from './support/compat.js';
import { useProviderEnv } from './support/providerEnv.js';
import { type OpenAIMediaUpstream, startOpenAIMediaUpstream } from './support/upstreams/openaiMedia.js';

const run = promisify(execFile);
const PYTHON = path.resolve('.venv/bin/python');
const PACKAGES = ['openai>=1.60', 'anthropic>=0.40', 'litellm>=1.60'];

const CHECKS: Array<[string, string]> = [
  ['openai (Python)', 'chat'],
  ['openai (Python)', 'streaming'],
  ['openai (Python)', 'embeddings'],
  ['openai (Python)', 'images'],
  ['openai (Python)', 'speech'],
  ['openai (Python)', 'transcription'],
  ['openai (Python)', 'model discovery'],
  ['openai (Python)', 'responses'],
  ['anthropic (Python)', 'chat'],
  ['anthropic (Python)', 'streaming'],
  ['anthropic (Python)', 'model discovery'],
  ['litellm (Python)', 'chat (openai/...)'],
  ['litellm (Python)', 'streaming (openai/...)'],
  ['litellm (Python)', 'chat (nano-gpt/...)'],
  ['litellm (Python)', 'chat (anthropic/...)'],
  ['litellm (Python)', 'embeddings (openai/...)'],
];

interface Row {
  client: string;
  feature: string;
  ok: boolean;
  error?: string;
  trace?: string;
}

/** The packages, installed into .venv unless they are already there. */
async function ensurePackages(): Promise<void> {
  try {
    await run(PYTHON, ['-c', 'import openai, anthropic, litellm']);
  } catch {
    await run(PYTHON, ['-m', 'pip', 'install', '--quiet', ...PACKAGES], { timeout: 600_000 });
  }
}

describe('third-party Python clients, by base URL only', function () {
  this.timeout(180_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let up: OpenAIMediaUpstream;
  let restoreEnv: () => Promise<void>;
  const rows = new Map<string, Row>();

  before(async function () {
    this.timeout(900_000);
    await ensurePackages();
    up = await startOpenAIMediaUpstream();
    restoreEnv = await useProviderEnv({ OPENAI_API_KEY: up.apiKey, OPENAI_BASE_URL: up.url }, ['OPENROUTER_API_KEY']);
    api = await startApi();
    const { key } = await newAccount('10');
    // the script runs while this process serves it: spawn, not a blocking call
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(PYTHON, [path.resolve('test/clients/python_clients.py'), api.base, key], {
        env: { ...process.env, LITELLM_LOCAL_MODEL_COST_MAP: 'True', NO_PROXY: '127.0.0.1' },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolve(stdout) : reject(new Error(`python_clients.py exited ${code}:\n${stderr.slice(-2000)}`)),
      );
    });
    for (const line of out.split('\n').filter((l) => l.startsWith('{'))) {
      const r = JSON.parse(line) as Row;
      rows.set(`${r.client}\u0000${r.feature}`, r);
    }
  });
  after(async () => {
    await api?.close();
    await up?.close();
    await restoreEnv?.();
    await saveCompatReport();
  });
  afterEach(() => assertBooksBalance());

  for (const [client, feature] of CHECKS) {
    compat(client, feature, async () => {
      const r = rows.get(`${client}\u0000${feature}`);
      assert.ok(r, `the script ran no check '${feature}' for ${client}`);
      assert.ok(r.ok, `${r.error}\n${r.trace ?? ''}`);
    });
  }
});
