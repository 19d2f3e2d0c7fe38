// POST /api/web (wire-details "Web search"): `query`, `provider` (linkup, tavily, searxng; the spec's
// others are refused by name), `depth`, `outputType`, `structuredOutputSchema` (JSON schema as text,
// required for `structured`), `includeImages`, `fromDate` / `toDate` (YYYY-MM-DD), `includeDomains`,
// `excludeDomains`, and `maxResults` (default 10).
const date = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' };
const domains = { type: 'array', maxItems: 100, items: { type: 'string', minLength: 1, maxLength: 253 } };

export const webSearchRequestSchema = {
  type: 'object',
  required: ['query'],
  properties: {
    query: { type: 'string', minLength: 1, maxLength: 4000 },
    provider: { type: 'string', minLength: 1 },
    depth: { type: 'string', enum: ['standard', 'deep'] },
    outputType: { type: 'string', enum: ['searchResults', 'sourcedAnswer', 'structured'] },
    structuredOutputSchema: { type: 'string', minLength: 2, maxLength: 100_000 },
    includeImages: { type: 'boolean' },
    fromDate: date,
    toDate: date,
    includeDomains: domains,
    excludeDomains: domains,
    maxResults: { type: 'integer', minimum: 1, maximum: 50 },
  },
} as const;
