// The gateway's core settings, read once. A few module-specific ones are read where they are
// used (LOCAL_* in providers/local/engine.ts, TOOL_SPEC_MAX_BYTES in surfaces/chat.ts,
// SWITCHYARD_FETCH_ALLOW_PRIVATE in media/safeFetch.ts, SWITCHYARD_DURABLE_REQUEST_CHARGES in
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
  /** activities one worker runs at once (it asks Temporal for work only while it has a free slot) */
  workerMaxActivities: number;
  /** per upstream attempt: to open the connection */
  upstreamConnectTimeoutMs: number;
  /** per upstream attempt: from the request sent to the response's first byte (its status and headers) */
  upstreamFirstByteTimeoutMs: number;
  /** per upstream attempt: the longest silence between two pieces of a response body */
  upstreamIdleTimeoutMs: number;
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
    serviceName: (str('SWITCHYARD_SERVICE_NAME') ?? 'nanogpt').toLowerCase(),
    bootstrapKey: str('SWITCHYARD_BOOTSTRAP_KEY'),
    bootstrapBalanceUsd: str('SWITCHYARD_BOOTSTRAP_BALANCE_USD'),
    catalogFile: path.resolve(projectDir, str('SWITCHYARD_CATALOG') ?? 'prisma/catalog.yaml'),
    dataDir: path.resolve(projectDir, str('SWITCHYARD_DATA_DIR') ?? '.data'),
    bodyLimitBytes: int('SWITCHYARD_BODY_LIMIT_BYTES', 10 * 1024 * 1024),
    maxJsonDepth: Math.max(1, int('SWITCHYARD_MAX_JSON_DEPTH', 64)),
    maxJsonValues: Math.max(1, int('SWITCHYARD_MAX_JSON_VALUES', 250_000)),
    holdTtlSeconds: int('SWITCHYARD_HOLD_TTL_SECONDS', 3600),
    keyCacheTtlMs: int('SWITCHYARD_KEY_CACHE_TTL_MS', 5000),
    authFailuresPerMinute: int('SWITCHYARD_AUTH_FAILURES_PER_MINUTE', 20),
    xnoUsdRate: str('SWITCHYARD_XNO_USD_RATE'),
    ttsSyncMaxChars: int('SWITCHYARD_TTS_SYNC_MAX_CHARS', 2000),
    passThrough: str('SWITCHYARD_PASS_THROUGH') !== '0',
    workerMaxActivities: int('TEMPORAL_MAX_CONCURRENT_ACTIVITIES', 50) || 50,
    upstreamConnectTimeoutMs: int('SWITCHYARD_UPSTREAM_CONNECT_TIMEOUT_MS', 10_000),
    upstreamFirstByteTimeoutMs: int('SWITCHYARD_UPSTREAM_FIRST_BYTE_TIMEOUT_MS', 120_000),
    upstreamIdleTimeoutMs: int('SWITCHYARD_UPSTREAM_IDLE_TIMEOUT_MS', 60_000),
  };
}

/** The process-wide configuration. Tests and the launcher may replace fields before start-up. */
export const config: Config = loadConfig();

// Read on every call (operators and tests may change them while running); only the names are kept.
const envNames = new Map<string, { apiKey: string; baseUrl: string }>();

/** The names of a provider's settings: `<PROVIDER>_API_KEY`, `<PROVIDER>_BASE_URL`. */
export function providerEnvNames(providerId: string): { apiKey: string; baseUrl: string } {
  let names = envNames.get(providerId);
  if (!names) {
    const prefix = providerId.toUpperCase().replace(/[^A-Z0-9]/g, '_');
    names = { apiKey: `${prefix}_API_KEY`, baseUrl: `${prefix}_BASE_URL` };
    envNames.set(providerId, names);
  }
  return names;
}

/** Upstream credentials follow the usual convention: `<PROVIDER>_API_KEY`, `<PROVIDER>_BASE_URL`. */
export function providerEnv(providerId: string): { apiKey?: string; baseUrl?: string } {
  const names = providerEnvNames(providerId);
  return { apiKey: str(names.apiKey), baseUrl: str(names.baseUrl) };
}
