// The gateway's core settings, read once. A few module-specific ones are read where they are
// used (LOCAL_* in providers/local/engine.ts, TOOL_SPEC_MAX_BYTES in surfaces/chat.ts,
// SWITCHYARD_FETCH_ALLOW_PRIVATE in core/safeFetch.ts, SWITCHYARD_DURABLE_REQUEST_CHARGES in
// db.ts). The README's "Configuration" table lists them all; keep it in step.
import 'dotenv/config';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const parent = fileURLToPath(new URL('..', import.meta.url));
/** The project's folder (this file runs from <root>/activities/, or compiled from <root>/dist/activities/). */
export const projectDir = existsSync(path.join(parent, 'package.json')) ? parent : path.dirname(parent);

function int(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

function str(name: string): string | undefined {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

export interface Config {
  port: number;
  host: string;
  /** unset = start an embedded PostgreSQL under dataDir (local use only) */
  databaseUrl: string | undefined;
  databaseMaxConnections: number;
  /** unset = start a Temporal dev server (local use only) */
  temporalAddress: string | undefined;
  temporalNamespace: string;
  taskQueue: string;
  /** how to reach a Temporal cluster beyond the dev server: TLS (files), mTLS, Temporal Cloud's API key */
  temporalSecurity: TemporalSecurity;
  /** the `<service>` of the spec: key prefix `sk-<service>-`, `x_<service>_pricing`, `<Service>` text tags */
  serviceName: string;
  bootstrapKey: string | undefined;
  bootstrapBalanceUsd: string | undefined;
  catalogFile: string;
  dataDir: string;
  /** largest request body accepted, after decompression */
  bodyLimitBytes: number;
  /** deepest nesting of arrays and objects accepted in a JSON request body */
  maxJsonDepth: number;
  /** most values (arrays, objects and their items) accepted in a JSON request body */
  maxJsonValues: number;
  /** how long a reservation may stay open before the sweeper releases it */
  holdTtlSeconds: number;
  /**
   * An API process's old generation grows to at most this much over what its last full collection
   * kept, in per cent (V8's `--heap-growing-percent`); 0 leaves it to V8 (up to 300%). See bin/api.ts.
   */
  apiHeapGrowthPercent: number;
  /** how long a resolved API key is trusted from memory before asking the database again */
  keyCacheTtlMs: number;
  /** failed authentications a client address may make per minute before it gets 429 (0: no limit) */
  authFailuresPerMinute: number;
  /** USD value of one XNO, for paying USD prices from the XNO balance; unset = XNO cannot pay */
  xnoUsdRate: string | undefined;
  /** POST /api/tts: inputs longer than this (characters) become an asynchronous job (202) */
  ttsSyncMaxChars: number;
  /** send a surface's body as written to upstreams that speak its format (false: always translate) */
  passThrough: boolean;
  /** PII redaction: the most time masking one request may take; past it the request is refused, not sent */
  redactionTimeoutMs: number;
  /** activities one worker runs at once (it asks Temporal for work only while it has a free slot) */
  workerMaxActivities: number;
  /** per upstream attempt: to open the connection */
  upstreamConnectTimeoutMs: number;
  /** per upstream attempt: from the request sent to the response's first byte (its status and headers) */
  upstreamFirstByteTimeoutMs: number;
  /** per upstream attempt: the longest silence between two pieces of a response body */
  upstreamIdleTimeoutMs: number;
  /** largest file POST /v1/files accepts (OpenAI's limit for a batch input file: 200 MB) */
  fileUploadMaxBytes: number;
  /** per key: bytes of uploaded batch files that no batch has started using yet */
  stagedFilesMaxBytes: number;
  /** per key: number of uploaded batch files that no batch has started using yet */
  stagedFilesMaxCount: number;
  /** uploads one API process streams into the database at once (each holds a connection until done) */
  fileUploadsMaxConcurrent: number;
  /** an upload that sends nothing for this long is dropped (it holds a connection and a transaction) */
  fileUploadIdleTimeoutMs: number;
  /** the image model of requests that name none (spec: `hidream`) */
  defaultImageModel: string;
  /** batch rows one batch runs at once */
  batchConcurrency: number;
  /** batch rows one account runs at once, across all its batches and every worker */
  batchAccountConcurrency: number;
  /** rows per child workflow of a batch (each child's history stays bounded) */
  batchChunkRows: number;
  /** batch rows one activity runs, 4 at a time (fewer engine round trips per row) */
  batchRowsPerActivity: number;
  /** a batch's completion window: rows not run by then are `expired` (the API accepts only "24h") */
  batchWindowSeconds: number;
  /** attempts a row gets when its provider fails retryably (429, 5xx) before it goes to the error file */
  batchRowAttempts: number;
  /** who may create a user through POST /api/auth/signup (and a first e-mail code): see accounts/signupPolicy.ts */
  signupPolicy: SignupPolicy;
  /** the operator's own login, made (or updated) at start-up beside the bootstrap key */
  bootstrapEmail: string | undefined;
  bootstrapPassword: string | undefined;
  /** a session unused for this long expires (each use pushes it back) */
  sessionTtlSeconds: number;
  /** how long an e-mailed sign-in code stays valid, and how many wrong tries it survives */
  emailCodeTtlSeconds: number;
  emailCodeAttempts: number;
  /** sign-in attempts (password, code requests, code checks) per e-mail address / client address per window */
  authAttemptsPerEmail: number;
  authAttemptsPerIp: number;
  authAttemptWindowSeconds: number;
  /** smtp(s)://user:pass@host:port; unset = e-mail goes to the log */
  smtpUrl: string | undefined;
  mailFrom: string;
  /** a team invitation not accepted within this long expires (its workflow's timer) */
  teamInvitationTtlSeconds: number;
  /** a subscription whose renewal the balance cannot pay stays usable in `grace` this long */
  subscriptionGraceSeconds: number;
  /** how often a subscription in grace tries to charge the balance again */
  subscriptionRetrySeconds: number;
  /** BTCPay Server (Greenfield API), the payment processor of crypto deposits; unset url: no deposits */
  btcpay: { url?: string; apiKey?: string; storeId?: string; webhookSecret?: string };
  /** how often a deposit's workflow asks BTCPay about its invoice when no webhook has come */
  depositPollSeconds: number;
  /** a credit invitation not redeemed within this long expires and its hold is released (its workflow's timer) */
  creditInvitationTtlSeconds: number;
  /** x402: the facilitator that verifies and settles payments, where they go, on which network, and for how long a quote stands */
  x402FacilitatorUrl: string | undefined;
  x402PayTo: string | undefined;
  x402Network: string;
  x402QuoteTtlSeconds: number;
  /** how long one facilitator call (verify, settle, supported) may take */
  x402FacilitatorTimeoutMs: number;
}

export interface TemporalSecurity {
  /** TEMPORAL_TLS; on by default when any other of these settings is given */
  tls: boolean;
  /** file paths: the CA that signed the server's certificate (unset: the system's roots), the client's pair */
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  serverName?: string;
  apiKey?: string;
}

function temporalSecurity(): TemporalSecurity {
  const s = {
    caFile: str('TEMPORAL_TLS_CA'),
    certFile: str('TEMPORAL_TLS_CERT'),
    keyFile: str('TEMPORAL_TLS_KEY'),
    serverName: str('TEMPORAL_TLS_SERVER_NAME'),
    apiKey: str('TEMPORAL_API_KEY'),
  };
  if (!s.certFile !== !s.keyFile) throw new Error('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together (mTLS)');
  const raw = str('TEMPORAL_TLS')?.toLowerCase();
  if (raw !== undefined && !['true', 'false', '1', '0'].includes(raw))
    throw new Error(`TEMPORAL_TLS must be true or false, got "${raw}"`);
  const tls = raw === undefined ? Object.values(s).some((v) => v !== undefined) : raw === 'true' || raw === '1';
  if (!tls && (s.caFile || s.certFile || s.serverName))
    throw new Error('TEMPORAL_TLS=false contradicts TEMPORAL_TLS_CA / _CERT / _SERVER_NAME');
  return { tls, ...s };
}

type SignupPolicy = 'open' | 'invite' | 'closed';

function signupPolicy(): SignupPolicy {
  const raw = (str('SWITCHYARD_SIGNUP') ?? 'open').toLowerCase();
  if (raw !== 'open' && raw !== 'invite' && raw !== 'closed')
    throw new Error(`SWITCHYARD_SIGNUP must be open, invite or closed, got "${raw}"`);
  return raw;
}

function loadConfig(): Config {
  return {
    port: int('PORT', 3000),
    host: str('HOST') ?? '127.0.0.1',
    databaseUrl: str('DATABASE_URL'),
    databaseMaxConnections: int('DATABASE_MAX_CONNECTIONS', 10),
    temporalAddress: str('TEMPORAL_ADDRESS'),
    temporalNamespace: str('TEMPORAL_NAMESPACE') ?? 'switchyard',
    taskQueue: str('TEMPORAL_TASK_QUEUE') ?? 'switchyard',
    temporalSecurity: temporalSecurity(),
    serviceName: (str('SWITCHYARD_SERVICE_NAME') ?? 'nanogpt').toLowerCase(),
    bootstrapKey: str('SWITCHYARD_BOOTSTRAP_KEY'),
    bootstrapBalanceUsd: str('SWITCHYARD_BOOTSTRAP_BALANCE_USD'),
    catalogFile: path.resolve(projectDir, str('SWITCHYARD_CATALOG') ?? 'prisma/catalog.yaml'),
    dataDir: path.resolve(projectDir, str('SWITCHYARD_DATA_DIR') ?? '.data'),
    bodyLimitBytes: int('SWITCHYARD_BODY_LIMIT_BYTES', 10 * 1024 * 1024),
    maxJsonDepth: Math.max(1, int('SWITCHYARD_MAX_JSON_DEPTH', 64)),
    maxJsonValues: Math.max(1, int('SWITCHYARD_MAX_JSON_VALUES', 250_000)),
    holdTtlSeconds: int('SWITCHYARD_HOLD_TTL_SECONDS', 3600),
    apiHeapGrowthPercent: int('SWITCHYARD_API_HEAP_GROWTH_PERCENT', 50),
    keyCacheTtlMs: int('SWITCHYARD_KEY_CACHE_TTL_MS', 5000),
    authFailuresPerMinute: int('SWITCHYARD_AUTH_FAILURES_PER_MINUTE', 20),
    xnoUsdRate: str('SWITCHYARD_XNO_USD_RATE'),
    ttsSyncMaxChars: int('SWITCHYARD_TTS_SYNC_MAX_CHARS', 2000),
    passThrough: str('SWITCHYARD_PASS_THROUGH') !== '0',
    redactionTimeoutMs: Math.max(1, int('SWITCHYARD_REDACTION_TIMEOUT_MS', 10_000)),
    workerMaxActivities: int('TEMPORAL_MAX_CONCURRENT_ACTIVITIES', 50) || 50,
    upstreamConnectTimeoutMs: int('SWITCHYARD_UPSTREAM_CONNECT_TIMEOUT_MS', 10_000),
    upstreamFirstByteTimeoutMs: int('SWITCHYARD_UPSTREAM_FIRST_BYTE_TIMEOUT_MS', 120_000),
    upstreamIdleTimeoutMs: int('SWITCHYARD_UPSTREAM_IDLE_TIMEOUT_MS', 60_000),
    fileUploadMaxBytes: int('SWITCHYARD_FILE_UPLOAD_MAX_BYTES', 200 * 1024 * 1024),
    stagedFilesMaxBytes: int('SWITCHYARD_STAGED_FILES_MAX_BYTES', 1024 * 1024 * 1024),
    stagedFilesMaxCount: int('SWITCHYARD_STAGED_FILES_MAX_COUNT', 100),
    // half the pool by default, so uploads alone can never starve the process's other requests
    fileUploadsMaxConcurrent:
      int('SWITCHYARD_FILE_UPLOADS_MAX_CONCURRENT', 0) ||
      Math.max(1, Math.floor(int('DATABASE_MAX_CONNECTIONS', 10) / 2)),
    fileUploadIdleTimeoutMs: Math.max(1, int('SWITCHYARD_FILE_UPLOAD_IDLE_TIMEOUT_MS', 30_000)),
    defaultImageModel: str('SWITCHYARD_DEFAULT_IMAGE_MODEL') ?? 'hidream',
    batchConcurrency: Math.max(1, int('SWITCHYARD_BATCH_CONCURRENCY', 32)),
    batchAccountConcurrency: Math.max(1, int('SWITCHYARD_BATCH_ACCOUNT_CONCURRENCY', 64)),
    batchChunkRows: Math.max(1, int('SWITCHYARD_BATCH_CHUNK_ROWS', 2000)),
    batchRowsPerActivity: Math.max(1, int('SWITCHYARD_BATCH_ROWS_PER_ACTIVITY', 256)),
    batchWindowSeconds: Math.max(1, int('SWITCHYARD_BATCH_WINDOW_SECONDS', 86_400)),
    batchRowAttempts: Math.max(1, int('SWITCHYARD_BATCH_ROW_ATTEMPTS', 5)),
    signupPolicy: signupPolicy(),
    bootstrapEmail: str('SWITCHYARD_BOOTSTRAP_EMAIL'),
    bootstrapPassword: str('SWITCHYARD_BOOTSTRAP_PASSWORD'),
    sessionTtlSeconds: Math.max(60, int('SWITCHYARD_SESSION_TTL_SECONDS', 30 * 24 * 3600)),
    emailCodeTtlSeconds: Math.max(30, int('SWITCHYARD_EMAIL_CODE_TTL_SECONDS', 600)),
    emailCodeAttempts: Math.max(1, int('SWITCHYARD_EMAIL_CODE_ATTEMPTS', 5)),
    authAttemptsPerEmail: int('SWITCHYARD_AUTH_ATTEMPTS_PER_EMAIL', 10),
    authAttemptsPerIp: int('SWITCHYARD_AUTH_ATTEMPTS_PER_IP', 50),
    authAttemptWindowSeconds: Math.max(1, int('SWITCHYARD_AUTH_ATTEMPT_WINDOW_SECONDS', 900)),
    smtpUrl: str('SMTP_URL'),
    mailFrom: str('MAIL_FROM') ?? 'Switchyard <switchyard@localhost>',
    teamInvitationTtlSeconds: Math.max(1, int('SWITCHYARD_TEAM_INVITATION_TTL_SECONDS', 7 * 24 * 3600)),
    subscriptionGraceSeconds: Math.max(0, int('SWITCHYARD_SUBSCRIPTION_GRACE_SECONDS', 3 * 24 * 3600)),
    subscriptionRetrySeconds: Math.max(1, int('SWITCHYARD_SUBSCRIPTION_RETRY_SECONDS', 6 * 3600)),
    btcpay: {
      url: str('BTCPAY_URL'),
      apiKey: str('BTCPAY_API_KEY'),
      storeId: str('BTCPAY_STORE_ID'),
      webhookSecret: str('BTCPAY_WEBHOOK_SECRET'),
    },
    depositPollSeconds: Math.max(1, int('SWITCHYARD_DEPOSIT_POLL_SECONDS', 60)),
    creditInvitationTtlSeconds: Math.max(1, int('SWITCHYARD_CREDIT_INVITATION_TTL_SECONDS', 30 * 24 * 3600)),
    x402FacilitatorUrl: str('X402_FACILITATOR_URL'),
    x402PayTo: str('X402_PAY_TO'),
    x402Network: str('X402_NETWORK') ?? 'eip155:8453',
    x402QuoteTtlSeconds: Math.max(10, int('X402_QUOTE_TTL_SECONDS', 300)),
    x402FacilitatorTimeoutMs: Math.max(100, int('X402_FACILITATOR_TIMEOUT_MS', 30_000)),
  };
}

/** The process-wide configuration. Tests and the launcher may replace fields before start-up. */
export const config: Config = loadConfig();

// Read on every call (operators and tests may change them while running); only the names are kept.
const envNames = new Map<string, { apiKey: string; baseUrl: string }>();

/** Providers whose settings are not named by the convention: SearXNG's URL is `SEARXNG_URL`, as its own docs name it. */
const ENV_NAME_EXCEPTIONS: Record<string, Partial<{ apiKey: string; baseUrl: string }>> = {
  searxng: { baseUrl: 'SEARXNG_URL' },
};

/** The names of a provider's settings: `<PROVIDER>_API_KEY`, `<PROVIDER>_BASE_URL` (but see ENV_NAME_EXCEPTIONS). */
export function providerEnvNames(providerId: string): { apiKey: string; baseUrl: string } {
  let names = envNames.get(providerId);
  if (!names) {
    const prefix = providerId.toUpperCase().replace(/[^A-Z0-9]/g, '_');
    names = { apiKey: `${prefix}_API_KEY`, baseUrl: `${prefix}_BASE_URL`, ...ENV_NAME_EXCEPTIONS[providerId] };
    envNames.set(providerId, names);
  }
  return names;
}

/** A provider's settings: its key and base URL (over the catalog's), unset when empty. */
export interface ProviderSettings {
  apiKey?: string;
  baseUrl?: string;
}

/**
 * Upstream credentials follow the usual convention: `<PROVIDER>_API_KEY`, `<PROVIDER>_BASE_URL`. The
 * catalog reads them when it loads (a route's `settings`), so a change needs a catalog reload.
 */
export function providerEnv(providerId: string): ProviderSettings {
  const names = providerEnvNames(providerId);
  return { apiKey: str(names.apiKey), baseUrl: str(names.baseUrl) };
}
