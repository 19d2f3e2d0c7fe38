// TLS in front of a plaintext Temporal dev server, as a production cluster's frontend (or a load
// balancer) presents it: certificates made with `openssl` for the test, and a TLS-terminating TCP proxy
// (ALPN h2, as gRPC requires) that can demand client certificates (mTLS). It counts the connections
// it carried, so a test can tell that a process reached Temporal through it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';

/** The name the server certificate is issued to (not resolvable: clients set TEMPORAL_TLS_SERVER_NAME). */
export const SERVER_NAME = 'temporal.switchyard.test';

export interface TestPki {
  dir: string;
  ca: string;
  /** a CA that signed nothing here: trusting it instead of `ca` must fail */
  otherCa: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  remove(): void;
}

function openssl(dir: string, args: string[]): void {
  try {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { code?: string; stderr?: Buffer };
    if (e.code === 'ENOENT') throw new Error('openssl is not installed (Debian: apt-get install openssl)');
    throw new Error(`openssl ${args.join(' ')} failed: ${e.stderr?.toString() ?? err}`);
  }
}

/** A CA, a server certificate for SERVER_NAME and 127.0.0.1, and a client certificate, all signed by the CA. */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-pki-'));
  const ca = (name: string) =>
    openssl(dir, [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
    ]);
  ca('ca');
  ca('other-ca');
  const leaf = (name: string, ext: string) => {
    openssl(dir, [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    ]);
    writeFileSync(path.join(dir, `${name}.ext`), ext);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    ]);
  };
  leaf('server', `subjectAltName=DNS:${SERVER_NAME},IP:127.0.0.1\nextendedKeyUsage=serverAuth\n`);
  leaf('client', 'extendedKeyUsage=clientAuth\n');
  const p = (f: string) => path.join(dir, f);
  return {
    dir,
    ca: p('ca.pem'),
    otherCa: p('other-ca.pem'),
    serverCert: p('server.pem'),
    serverKey: p('server.key'),
    clientCert: p('client.pem'),
    clientKey: p('client.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface TlsProxy {
  address: string;
  /** TLS sessions set up (and, under mTLS, with a client certificate the CA signed) */
  accepted: number;
  /** handshakes that failed, with the reason */
  refused: string[];
  close(): Promise<void>;
}

/** Terminates TLS on a free loopback port and pipes each connection to `target` (host:port) in plaintext. */
export async function startTlsProxy(pki: TestPki, target: string, opts: { mutual: boolean }): Promise<TlsProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<net.Socket>();
  const proxy: TlsProxy = { address: '', accepted: 0, refused: [], close: async () => {} };
  const server = tls.createServer(
    {
      key: readFileSync(pki.serverKey),
      cert: readFileSync(pki.serverCert),
      ca: readFileSync(pki.ca),
      ALPNProtocols: ['h2'],
      requestCert: opts.mutual,
      rejectUnauthorized: opts.mutual,
    },
    (client) => {
      proxy.accepted++;
      const upstream = net.connect(port, host);
      sockets.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      const end = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    },
  );
  server.on('tlsClientError', (err) => proxy.refused.push(err.message));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  proxy.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return proxy;
}
