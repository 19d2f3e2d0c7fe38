// A chat test bench: the real API, two loopback OpenAI-protocol upstreams configured as the
// catalog's `openai` and `openrouter` providers (both serve openai/gpt-4o-mini), an account with
// a key, and helpers to post and to read the books.
import { startApi, newAccount } from './api.js';
import { startOpenAIUpstream, type OpenAIUpstream } from './upstreams/openai.js';
import { useProviderEnv } from './providerEnv.js';
import type { KeyRestrictions } from '../../activities/accounts/keys.js';
import { assertBooksBalance, settledBalances } from './books.js';

export interface ChatBench {
  base: string;
  openai: OpenAIUpstream;
  openrouter: OpenAIUpstream;
  account(usd?: string, restrictions?: KeyRestrictions): Promise<{ accountId: string; key: string; keyId: string }>;
  post(key: string, body: unknown, headers?: Record<string, string>, path?: string): Promise<Response>;
  usd(accountId: string): Promise<{ amount: bigint; held: bigint; available: bigint }>;
  close(): Promise<void>;
}

export async function startChatBench(): Promise<ChatBench> {
  const openai = await startOpenAIUpstream({ strict: true });
  const openrouter = await startOpenAIUpstream({ basePath: '/api/v1', apiKey: 'sk-or-loopback' });
  const restoreEnv = await useProviderEnv({
    OPENAI_API_KEY: openai.apiKey,
    OPENAI_BASE_URL: openai.url,
    OPENROUTER_API_KEY: openrouter.apiKey,
    OPENROUTER_BASE_URL: openrouter.url,
  });
  const api = await startApi();
  return {
    base: api.base,
    openai,
    openrouter,
    account: (usd = '10', restrictions = {}) => newAccount(usd, restrictions),
    post: (key, body, headers = {}, path = '/api/v1/chat/completions') => api.post(path, body, { key, headers }),
    usd: async (accountId) => (await settledBalances(accountId)).USD,
    async close() {
      await api.close();
      await openai.close();
      await openrouter.close();
      await restoreEnv();
    },
  };
}

/**
 * Mocha hooks for a suite on the chat bench: started once, upstreams reset before each test, the
 * books checked after each. Returns the bench (available from the first test on).
 */
export function useChatBench(): () => ChatBench {
  let bench: ChatBench;
  before(async () => (bench = await startChatBench()));
  after(() => bench.close());
  beforeEach(() => {
    bench.openai.reset();
    bench.openrouter.reset();
  });
  afterEach(() => assertBooksBalance());
  return () => bench;
}

/** Reads an SSE response into its `data:` payloads (JSON parsed, except [DONE]). */
export async function readSse(res: Response): Promise<Array<any>> {
  const text = await res.text();
  return text
    .split(/\n\n/)
    .map((f) =>
      f
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n'),
    )
    .filter(Boolean)
    .map((d) => (d === '[DONE]' ? d : JSON.parse(d)));
}

/**
 * Reads a streamed response until `text` has arrived (the caller then leaves mid-stream); fails if
 * the stream ends first. The body is left unread after that.
 */
export async function readUntil(res: Response, text: string): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let seen = '';
  while (!seen.includes(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before ${JSON.stringify(text)}: ${seen}`);
    seen += decoder.decode(value, { stream: true });
  }
  return seen;
}
