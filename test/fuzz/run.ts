// The fuzzer's engine: sends cases (a few at a time), judges every answer (oracle.ts), checks that no
// refused request was charged or left money held (the ledger, by request id), that the gateway
// still answers /health, and tallies what it saw. Used by test/fuzz/fuzz.test.ts (bounded, in
// CI) and bench/fuzz.ts (longer, against the gateway as its own process, with RSS).
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { db } from '../../activities/db.js';
import type { Envelope } from '../../activities/surfaces/errors.js';
import { type Answer, type Outcome, type Request, send, sendRaw } from './http.js';
import { knownDefect, type Sent } from './known.js';
import { judge } from './oracle.js';
import { type Case, routeCases } from './routes.js';
import type { ServedRoute } from './served.js';
import { jsonText } from './values.js';

export interface Target {
  origin: URL;
  /** placeholder name → value */
  fixtures: Map<string, string>;
  /** upstream keys and addresses */
  secrets: string[];
  /** make charges still in memory (credit leases) visible in the database */
  settle(): Promise<void>;
}

export interface Tally {
  sent: number;
  statuses: Record<string, number>;
  failures: Sent[];
  /** failures that are known defects, by issue item */
  known: Record<string, number>;
  /** ids of jobs the fuzz started (to cancel afterwards) */
  jobs: Set<string>;
  /** the slowest cases, slowest first */
  slowest: Array<{ ms: number; what: string }>;
  /** time spent per kind of case */
  byKind: Record<string, number>;
}

export const newTally = (): Tally => ({
  sent: 0,
  statuses: {},
  failures: [],
  known: {},
  jobs: new Set(),
  slowest: [],
  byKind: {},
});

const PLACEHOLDER = /\{\{([\w:]+)\}\}|%7B%7B([\w:]+)%7D%7D/g;

function fill(s: string, fixtures: Map<string, string>): string {
  return s.replace(PLACEHOLDER, (all, a, b) => fixtures.get(a ?? b) ?? all);
}

/** The case as bytes on the wire. */
/** The case as bytes on the wire, and its body before compression (what an answer could echo). */
function materialize(c: Case, fixtures: Map<string, string>): { req: Request; plain?: Buffer } {
  const headers = Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k, fill(v, fixtures)]));
  let plain: Buffer | undefined;
  if (Buffer.isBuffer(c.body)) plain = Buffer.from(fill(c.body.toString('latin1'), fixtures), 'latin1');
  else if (c.body !== undefined) plain = Buffer.from(fill(jsonText(c.body), fixtures), 'utf8');
  let body = plain;
  if (plain && c.encoding) {
    body =
      c.encoding === 'gzip' ? gzipSync(plain) : c.encoding === 'br' ? brotliCompressSync(plain) : deflateSync(plain);
    headers['content-encoding'] = c.encoding;
  }
  return { req: { method: c.method, path: fill(c.path, fixtures), headers, body }, plain };
}

function describe(req: Request, c: Case, plain?: Buffer): string {
  if (c.raw) {
    const text = c.raw.parts.map((p) => (Buffer.isBuffer(p) ? p.toString('latin1') : p)).join('');
    return JSON.stringify(text.length > 600 ? `${text.slice(0, 600)}…(${text.length} bytes)` : text);
  }
  const body = (plain ?? req.body)?.toString('utf8') ?? '';
  const shown = body.length > 600 ? `${body.slice(0, 600)}…(${body.length} bytes)` : body;
  const headers = JSON.stringify(req.headers).slice(0, 300);
  return `${req.method} ${req.path.slice(0, 300)} ${headers} ${JSON.stringify(shown)}`;
}

async function sendCase(
  target: Target,
  c: Case,
  timeoutMs: number,
): Promise<{ outcome: Outcome; req: Request; plain?: Buffer; text: string }> {
  const { req, plain } = materialize(c, target.fixtures);
  if (c.raw) {
    const parts = c.raw.parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(fill(p, target.fixtures), 'latin1')));
    const outcome = await sendRaw(target.origin, parts, { ...c.raw, timeoutMs: Math.min(timeoutMs, 3000) });
    return { outcome, req, plain, text: Buffer.concat(parts).toString('latin1') };
  }
  const outcome = await send(target.origin, req, timeoutMs);
  // the body as UTF-8 and as Latin-1: an answer may echo either reading of it
  const body = `${plain?.toString('utf8') ?? ''} ${plain?.toString('latin1') ?? ''}`;
  const text = `${req.method} ${decodeSafe(req.path)} ${JSON.stringify(req.headers)} ${body}`;
  return { outcome, req, plain, text };
}

const decodeSafe = (s: string) => {
  try {
    return `${s} ${decodeURIComponent(s)}`;
  } catch {
    return s;
  }
};

/** Runs `cases`, `concurrency` at a time, into `tally`; then checks the money of every refused request. */
export async function runCases(
  target: Target,
  cases: Case[],
  tally: Tally,
  opts: { concurrency: number; timeoutMs: number; deadline?: number; upstreamsFailing?: boolean },
): Promise<void> {
  const refused: Array<{ requestId: string; sent: Sent }> = [];
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      if (opts.deadline && Date.now() > opts.deadline) return;
      const c = cases[next++];
      const t0 = Date.now();
      const { outcome, req, plain, text } = await sendCase(target, c, opts.timeoutMs);
      noteTime(tally, Date.now() - t0, `${c.route} ${c.kind} ${describe(req, c, plain).slice(0, 160)}`);
      const kind = c.kind.replace(/ #.*| \d.*|:.*| in string field.*/, '');
      tally.byKind[kind] = (tally.byKind[kind] ?? 0) + Date.now() - t0;
      const sent: Sent = { case: c, summary: describe(req, c, plain), requestText: text, outcome, problems: [] };
      tally.sent++;
      // audio streamed as it comes can only stop short when its upstream breaks off (the charge is for
      // what was sent); anything else must answer whole
      const audioCut =
        opts.upstreamsFailing && /^audio\//.test(String(outcome.answers[0]?.headers['content-type'] ?? ''));
      if (outcome.error && !c.raw && !audioCut) sent.problems.push(outcome.error);
      if (!outcome.answers.length && !c.raw) sent.problems.push('no answer');
      for (const a of outcome.answers) {
        const key = `${a.status}`;
        tally.statuses[key] = (tally.statuses[key] ?? 0) + 1;
        sent.problems.push(
          ...judge(a, {
            envelope: c.envelope as Envelope,
            method: c.method,
            requestText: text,
            secrets: { values: target.secrets },
            upstreamsFailing: opts.upstreamsFailing,
          }),
        );
        const id = a.headers['x-request-id'];
        if (a.status >= 400 && typeof id === 'string') refused.push({ requestId: id, sent });
        noteJob(a, tally);
      }
      record(sent, tally);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  await checkNothingCharged(target, refused, tally);
}

function noteTime(tally: Tally, ms: number, what: string): void {
  if (tally.slowest.length >= 8 && ms <= tally.slowest[7].ms) return;
  tally.slowest.push({ ms, what });
  tally.slowest.sort((a, b) => b.ms - a.ms);
  tally.slowest.length = Math.min(tally.slowest.length, 8);
}

function record(sent: Sent, tally: Tally): void {
  if (!sent.problems.length) return;
  sent.known = knownDefect(sent);
  if (sent.known) tally.known[sent.known] = (tally.known[sent.known] ?? 0) + 1;
  else tally.failures.push(sent);
}

/** Jobs the fuzz started: cancelled afterwards, so nothing keeps running on the loopback upstreams. */
function noteJob(a: Answer, tally: Tally): void {
  if (a.status !== 200 && a.status !== 202) return;
  if (!String(a.headers['content-type']).includes('json')) return;
  try {
    const j = JSON.parse(a.body.toString('utf8'));
    if (typeof j?.runId === 'string') tally.jobs.add(j.runId);
    if (typeof j?.id === 'string' && j.background === true) tally.jobs.add(j.id);
  } catch {
    // not JSON after all: nothing to note
  }
}

/**
 * A refused request (status ≥ 400) is charged nothing (its charges, net of refunds, are zero) and
 * holds nothing (no active reservation carries its request id).
 */
async function checkNothingCharged(target: Target, refused: Array<{ requestId: string; sent: Sent }>, tally: Tally) {
  if (!refused.length) return;
  await target.settle();
  const ids = refused.map((r) => r.requestId);
  const { rows: charged } = await db().pool.query(
    `SELECT split_part(e.request_id, ':', 1) AS request_id,
            SUM(e.amount + COALESCE((SELECT SUM(r.amount) FROM ledger_entries r WHERE r.refund_of = e.id), 0))::text
              AS net
       FROM ledger_entries e WHERE e.kind = 'charge' AND split_part(e.request_id, ':', 1) = ANY($1)
      GROUP BY split_part(e.request_id, ':', 1)`,
    [ids],
  );
  // a request answered by several calls (chat's `n`, the advisor's phases) charges `<id>:<part>` too
  const { rows: held } = await db().pool.query(
    `SELECT split_part(request_id, ':', 1) AS request_id, SUM(amount)::text AS held FROM balance_holds
      WHERE status = 'active' AND split_part(request_id, ':', 1) = ANY($1) GROUP BY split_part(request_id, ':', 1)`,
    [ids],
  );
  const problems = new Map<string, string>();
  for (const r of charged) if (BigInt(r.net) !== 0n) problems.set(r.request_id, `refused, yet charged ${r.net}`);
  for (const r of held) problems.set(r.request_id, `refused, yet ${r.held} still held`);
  for (const { requestId, sent } of refused) {
    const p = problems.get(requestId);
    if (!p) continue;
    const wasClean = !sent.problems.length;
    sent.problems.push(`${p} (${requestId})`);
    if (wasClean) record(sent, tally);
    else if (!sent.known) {
      // already counted as a failure; the money problem joins it
    } else {
      // re-judge: a known defect might not explain the charge
      tally.known[sent.known]--;
      record(sent, tally);
    }
  }
}

/** The gateway still answers. */
export async function assertAlive(target: Target): Promise<string | undefined> {
  const o = await send(target.origin, { method: 'GET', path: '/health', headers: {} }, 5000);
  const a = o.answers[0];
  if (a?.status !== 200) return `GET /health: ${o.error ?? a?.status}`;
  return undefined;
}

/**
 * `runs` generated cases for each route, from `seed` (each route its own stream, so one route's cases
 * do not depend on another's).
 */
export function generatedCases(routes: ServedRoute[], seed: number, runs: number, validOnly = false): Case[] {
  return routes.flatMap((route) =>
    fc
      .sample(routeCases(route, validOnly), { seed: (seed ^ hash(route.path)) | 0, numRuns: runs })
      .map((c, i) => ({ ...c, kind: `generated #${i} (seed ${seed})` })),
  );
}

function hash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}

/** One line: how many, how long, which statuses, which known defects. */
export function summary(tally: Tally, seconds: number): string {
  const known = Object.entries(tally.known)
    .filter(([, n]) => n > 0)
    .map(([item, n]) => `${item}: ${n}`)
    .join('; ');
  const statuses = `statuses ${JSON.stringify(tally.statuses)}${known ? `; known defects (${known})` : ''}`;
  return `${tally.sent} requests in ${seconds.toFixed(1)} s; ${statuses}`;
}

/** The failures, one example of each kind (route and problem) with how often it happened. */
export function failureReport(tally: Tally): string[] {
  const groups = new Map<string, { n: number; example: Sent }>();
  for (const f of tally.failures) {
    const what = `${f.case.route} ${f.problems.map((p) => p.replace(/[:(].*/, '')).join('; ')}`;
    const g = groups.get(what);
    if (g) g.n++;
    else groups.set(what, { n: 1, example: f });
  }
  return [...groups.values()].map((g) => `${g.n}× ${report(g.example)}`);
}

/** One failure, as a person reads it. */
function report(s: Sent): string {
  const answers = s.outcome.answers.map((a) => `${a.status} ${a.body.toString('utf8').slice(0, 300)}`).join(' | ');
  const head = `[${s.case.route}] ${s.case.kind}: ${s.problems.join('; ')}`;
  return `${head}\n    sent: ${s.summary}\n    got: ${answers || s.outcome.error}`;
}
