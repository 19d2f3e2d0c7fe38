// The last resort of findTemporalCli (cli.ts), for machines with internet but no Python: the
// official CLI archive, downloaded and read as it streams, keeping only the `temporal` binary.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';

/** TEMPORAL_CLI_DOWNLOAD_URL (a .tar.gz with a `temporal` file) overrides it, e.g. for a company mirror. */
export function officialUrl(): string | null {
  if (process.env.TEMPORAL_CLI_DOWNLOAD_URL) return process.env.TEMPORAL_CLI_DOWNLOAD_URL;
  const platform = ({ linux: 'linux', darwin: 'darwin' } as Record<string, string>)[process.platform];
  const arch = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch];
  return platform && arch ? `https://temporal.download/cli/archive/latest?platform=${platform}&arch=${arch}` : null;
}

/** Downloads the official .tar.gz and extracts only the `temporal` binary; rename makes it appear atomically. */
export async function downloadOfficial(dest: string, log: (msg: string) => void): Promise<void> {
  const url = officialUrl();
  if (!url)
    throw new Error(
      `no automatic download for ${process.platform}/${process.arch}; install the CLI from https://docs.temporal.io/cli`,
    );
  log(`Downloading the Temporal CLI from ${url}...`);
  await fs.mkdir(path.dirname(dest), { recursive: true });
  const tmp = `${dest}.download-${process.pid}-${Date.now()}`;
  // 30 s to get response headers (offline machines fail fast with ENOTFOUND anyway), 15 min overall.
  const abort = new AbortController();
  let timer = setTimeout(() => abort.abort(new Error('no response within 30 s')), 30_000);
  try {
    const res = await fetch(url, { signal: abort.signal, redirect: 'follow' });
    clearTimeout(timer);
    timer = setTimeout(() => abort.abort(new Error('download took longer than 15 min')), 15 * 60_000);
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status} ${res.statusText}`);
    const gunzip = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>).pipe(
      zlib.createGunzip(),
    );
    if (!(await extractFromTar(gunzip, 'temporal', tmp))) throw new Error('the archive contains no `temporal` file');
    await fs.chmod(tmp, 0o755);
    await fs.rename(tmp, dest);
    log(`Downloaded the Temporal CLI to ${dest}`);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(
      `${err instanceof Error ? err.message : String(err)}${cause ? ` (${cause.code ?? cause.message})` : ''}`,
    );
  } finally {
    clearTimeout(timer);
    abort.abort(); // we stop reading once the binary is out: release the connection
    await fs.rm(tmp, { force: true });
  }
}

/** Minimal streaming ustar reader: writes the first regular file whose basename is `wanted` to `dest`. */
async function extractFromTar(source: AsyncIterable<Buffer>, wanted: string, dest: string): Promise<boolean> {
  let pending: Buffer = Buffer.alloc(0);
  let remaining = 0; // body bytes left in the current entry
  let padding = 0; // zero bytes up to the next 512-byte boundary
  let out: fs.FileHandle | null = null;
  const cstr = (b: Buffer, start: number, len: number) =>
    b
      .subarray(start, start + len)
      .toString('utf8')
      .replace(/\0.*$/s, '');
  try {
    for await (const chunk of source) {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      for (;;) {
        if (remaining > 0 || padding > 0) {
          const n = Math.min(remaining > 0 ? remaining : padding, pending.length);
          if (n === 0) break;
          if (remaining > 0) {
            if (out) await out.write(pending.subarray(0, n));
            remaining -= n;
            if (remaining === 0 && out) {
              await out.close();
              out = null;
              return true;
            }
          } else padding -= n;
          pending = pending.subarray(n);
          continue;
        }
        if (pending.length < 512) break;
        const header = pending.subarray(0, 512);
        pending = pending.subarray(512);
        if (header.every((b) => b === 0)) continue; // end-of-archive blocks
        const name = cstr(header, 0, 100);
        const size = parseInt(cstr(header, 124, 12).trim() || '0', 8);
        const type = String.fromCharCode(header[156]);
        remaining = size;
        padding = (512 - (size % 512)) % 512;
        if ((type === '0' || type === '\0') && path.posix.basename(name) === wanted && size > 0) {
          out = await fs.open(dest, 'w', 0o755);
        }
      }
    }
    return false;
  } finally {
    await out?.close();
  }
}
