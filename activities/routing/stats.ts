// What this process has measured about each route: time to first token and output speed, as
// exponentially weighted moving averages. `:latency` and `:throughput` sort by them; routes with
// no measurement yet keep their catalog order behind measured ones only when worse is known.
const ALPHA = 0.2;

interface RouteStats {
  latencyMs?: number;
  tokensPerSecond?: number;
}

const stats = new Map<string, RouteStats>();

const ewma = (prev: number | undefined, value: number) => (prev === undefined ? value : prev + ALPHA * (value - prev));

export function recordLatency(routeId: string, firstTokenMs: number): void {
  const s = stats.get(routeId) ?? {};
  s.latencyMs = ewma(s.latencyMs, firstTokenMs);
  stats.set(routeId, s);
}

export function recordThroughput(routeId: string, outputTokens: number, generationMs: number): void {
  if (outputTokens <= 0 || generationMs <= 0) return;
  const s = stats.get(routeId) ?? {};
  s.tokensPerSecond = ewma(s.tokensPerSecond, (outputTokens * 1000) / generationMs);
  stats.set(routeId, s);
}

export function routeStats(routeId: string): RouteStats {
  return stats.get(routeId) ?? {};
}
