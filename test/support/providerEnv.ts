// Provider settings for one suite: the loopback upstreams' keys and URLs in the environment
// (`<PROVIDER>_API_KEY`, `<PROVIDER>_BASE_URL`, as a real install has them), the catalog reloaded
// (which routes are usable depends on them), and everything put back afterwards.
import { loadCatalog } from '../../activities/catalog/catalog.js';

/**
 * Unset `clear`, set `values` (undefined: unset), reload the catalog. Returns what undoes it (the previous values
 * back, the catalog reloaded).
 */
export async function useProviderEnv(
  values: Record<string, string | undefined>,
  clear: string[] = [],
): Promise<() => Promise<void>> {
  const names = [...new Set([...clear, ...Object.keys(values)])];
  const saved = Object.fromEntries(names.map((k) => [k, process.env[k]]));
  for (const k of clear) delete process.env[k];
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await loadCatalog();
  return async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await loadCatalog();
  };
}
