// POST /api/web: a direct web search (activities/search/search.ts: the spec's flat fee, reserved,
// charged once on the provider that answered, nothing for a failure). The answer is
// `{data, metadata:{query, provider, depth, outputType, timestamp, cost}}` with `data` in the
// output type's shape: `searchResults` [{type, title, url, content, imageUrl?}], `sourcedAnswer`
// {answer, sources:[{name, url, snippet}]}, `structured` the object the schema asked for.
import Router from '@koa/router';
import { clientAbortSignal } from '../clientAbort.js';
import { chargeOnDelivery } from '../delivery.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedRedaction } from '../middleware/notOffered.js';
import { surface } from '../middleware/surface.js';
import { webSearchRequestSchema } from '../../activities/surfaces/schemas/web.js';
import { validateBody } from '../validate.js';
import { RequestError } from '../../activities/core/errors.js';
import { billOf } from '../../activities/metering/meteredCall.js';
import type { SearchAnswer, SearchOutputType } from '../../activities/providers/types.js';
import { SearchCall, searchBalanceError } from '../../activities/search/search.js';
import { searchProvider } from '../../activities/search/settings.js';
import type { AppState } from '../state.js';

export const webRouter = new Router<AppState>();

const DEFAULT_RESULTS = 10;

interface WebBody {
  query: string;
  provider?: string;
  depth?: 'standard' | 'deep';
  outputType?: SearchOutputType;
  structuredOutputSchema?: string;
  includeImages?: boolean;
  fromDate?: string;
  toDate?: string;
  includeDomains?: string[];
  excludeDomains?: string[];
  maxResults?: number;
}

const bad = (message: string, param: string) => new RequestError(400, 'invalid_parameter_value', message, { param });

/** Rules a schema cannot say: a real date range, a schema that is a JSON object, a provider that is not native. */
function checked(b: WebBody): WebBody {
  for (const f of ['fromDate', 'toDate'] as const)
    if (b[f] && Number.isNaN(Date.parse(`${b[f]}T00:00:00Z`))) throw bad(`'${f}' is not a date.`, f);
  if (b.fromDate && b.toDate && b.fromDate > b.toDate) throw bad("'fromDate' is after 'toDate'.", 'fromDate');
  if (b.outputType === 'structured') {
    if (!b.structuredOutputSchema)
      throw bad(
        "outputType 'structured' needs 'structuredOutputSchema' (a JSON schema, as text).",
        'structuredOutputSchema',
      );
    let schema: unknown;
    try {
      schema = JSON.parse(b.structuredOutputSchema);
    } catch {
      throw bad("'structuredOutputSchema' is not JSON.", 'structuredOutputSchema');
    }
    if ((schema as { type?: unknown } | null)?.type !== 'object')
      throw bad(
        '\'structuredOutputSchema\' must be a JSON schema whose root has type "object".',
        'structuredOutputSchema',
      );
  }
  if (b.provider && searchProvider(b.provider, 'provider') === 'native')
    throw bad("'native' search belongs to a model's provider: use it through chat (web_search.provider).", 'provider');
  return b;
}

/** The output type's `data`. */
function dataOf(outputType: SearchOutputType, a: SearchAnswer) {
  if (outputType === 'structured') return a.structured;
  if (outputType === 'sourcedAnswer')
    return {
      answer: a.answer ?? '',
      sources: a.results.map((h) => ({ name: h.title, url: h.url, snippet: h.content })),
    };
  return a.results.map((h) => ({
    type: h.type,
    title: h.title,
    url: h.url,
    content: h.content,
    ...(h.imageUrl ? { imageUrl: h.imageUrl } : {}),
  }));
}

// PII redaction is not offered here (a masked query would search for its placeholders): asked
// for by the header or the caller's default, the search is refused rather than sent unmasked
const preamble = [surface('openai'), authenticate, refuseUnofferedRedaction, validateBody(webSearchRequestSchema)];

webRouter.post('/api/web', ...preamble, async (ctx) => {
  const b = checked(ctx.request.body as WebBody);
  const depth = b.depth ?? 'standard';
  const outputType = b.outputType ?? 'searchResults';
  const provider = b.provider ? searchProvider(b.provider, 'provider') : undefined;
  const call = new SearchCall(
    ctx.state.caller,
    ctx.state.requestId,
    {
      query: b.query,
      depth,
      outputType,
      structuredOutputSchema: b.structuredOutputSchema,
      includeImages: b.includeImages,
      fromDate: b.fromDate,
      toDate: b.toDate,
      includeDomains: b.includeDomains?.map((d) => d.trim().toLowerCase()),
      excludeDomains: b.excludeDomains?.map((d) => d.trim().toLowerCase()),
      maxResults: b.maxResults ?? DEFAULT_RESULTS,
    },
    provider,
  );
  const outcome = await call.run(clientAbortSignal(ctx)).catch((err) => {
    throw err instanceof RequestError && err.status === 402 && err.code === 'insufficient_balance'
      ? searchBalanceError(err, 'webSearch_balance_required', 'this web search')
      : err;
  });
  chargeOnDelivery(ctx, call.metered);
  const bill = billOf(outcome.charge);
  ctx.body = {
    data: dataOf(outputType, outcome.answer),
    metadata: {
      query: b.query,
      provider: outcome.route.provider.id,
      depth,
      outputType,
      timestamp: new Date().toISOString(),
      cost: bill.cost,
    },
    cost: bill.cost,
    paymentSource: bill.paymentSource,
    remainingBalance: bill.remainingBalance,
  };
});
