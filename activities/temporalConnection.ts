// How every process reaches Temporal: the API's client, the worker's native connection, the
// schedules and the search-attribute registration all take their options from here, so a cluster
// behind TLS, mTLS or Temporal Cloud's API key is configured once (TEMPORAL_TLS_*, TEMPORAL_API_KEY).
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { config, type TemporalSecurity } from './config.js';

/** The part of the SDKs' connection options this sets; @temporalio/client and /worker both take it. */
export interface TemporalConnectionOptions {
  address: string;
  tls?: {
    serverNameOverride?: string;
    serverRootCACertificate?: Buffer;
    clientCertPair?: { crt: Buffer; key: Buffer };
  };
  apiKey?: string;
}

function readPem(setting: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new Error(`${setting}: cannot read ${file} (${(err as Error).message})`);
  }
}

/** The options for `address` under `security` (the configuration's by default); the files are read on each call. */
export function temporalConnectionOptions(
  address: string,
  security: TemporalSecurity = config.temporalSecurity,
): TemporalConnectionOptions {
  const options: TemporalConnectionOptions = { address };
  if (security.apiKey) options.apiKey = security.apiKey;
  if (!security.tls) return options;
  options.tls = {};
  if (security.serverName) options.tls.serverNameOverride = security.serverName;
  if (security.caFile) options.tls.serverRootCACertificate = readPem('TEMPORAL_TLS_CA', security.caFile);
  if (security.certFile && security.keyFile) {
    options.tls.clientCertPair = {
      crt: readPem('TEMPORAL_TLS_CERT', security.certFile),
      key: readPem('TEMPORAL_TLS_KEY', security.keyFile),
    };
  }
  return options;
}

/**
 * What a TLS handshake with `address` under `security` says, when gRPC's own error does not: an
 * untrusted certificate surfaces there only as "Failed to connect before the deadline". undefined
 * when the handshake succeeds (the problem lies elsewhere).
 */
function tlsHandshakeError(address: string, security: TemporalSecurity): Promise<string | undefined> {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon);
  return new Promise((resolve) => {
    let options: tls.ConnectionOptions;
    try {
      const o = temporalConnectionOptions(address, security).tls ?? {};
      options = {
        host,
        port: Number(address.slice(colon + 1)),
        servername: o.serverNameOverride ?? (net.isIP(host) ? undefined : host),
        ca: o.serverRootCACertificate,
        cert: o.clientCertPair?.crt,
        key: o.clientCertPair?.key,
        ALPNProtocols: ['h2'],
      };
      if (o.serverNameOverride)
        options.checkServerIdentity = (_, cert) => tls.checkServerIdentity(o.serverNameOverride!, cert);
    } catch (err) {
      return resolve((err as Error).message);
    }
    const socket = tls.connect(options);
    const done = (why: string | undefined) => {
      socket.destroy();
      resolve(why);
    };
    socket.setTimeout(1000, () => done(undefined));
    socket.once('error', (err) => done(err.message));
    // a server that wants a client certificate says so (TLS 1.3) just after the handshake
    socket.once('secureConnect', () => setTimeout(() => done(undefined), 200));
  });
}

/**
 * A connection failure with the likely cause named: when TLS is on and gRPC gives no reason, the
 * handshake is tried again alone, and its error (an untrusted certificate, a refused client) is told.
 */
export async function explainTemporalError(
  err: unknown,
  address: string,
  security: TemporalSecurity = config.temporalSecurity,
): Promise<Error> {
  const message = err instanceof Error ? err.message : String(err);
  let detail = '';
  if (security.tls) {
    const why = await tlsHandshakeError(address, security);
    if (why) {
      detail =
        `; TLS handshake: ${why} (check that TEMPORAL_TLS_CA signed the server's certificate, that ` +
        'TEMPORAL_TLS_SERVER_NAME is a name on it, and, if the server asks for client certificates, ' +
        'TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY)';
    }
  }
  const wrapped = new Error(`cannot reach Temporal at ${address}: ${message}${detail}`);
  wrapped.cause = err;
  return wrapped;
}
