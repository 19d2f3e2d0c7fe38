// A tiny cookie-keeping client for the session routes: it sends what a browser on the gateway's
// own page would (its Origin, the session cookie it was given) from a client address of its own
// (X-Forwarded-For, for an API started with SWITCHYARD_TRUST_PROXY=1), so each test has its own
// per-address sign-in allowance.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createApp } from '../../api/app.js';

let nextAddress = 1;

export class Browser {
  cookie: string | undefined;
  /** the last Set-Cookie line of the session cookie */
  setCookie: string | undefined;
  readonly ip = `198.51.100.${nextAddress++ % 250}`;
  origin: string | null;

  constructor(readonly base: string) {
    this.origin = base;
  }

  async req(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const h: Record<string, string> = { 'x-forwarded-for': this.ip, ...headers };
    if (this.origin) h.origin = this.origin;
    if (this.cookie) h.cookie = `switchyard_session=${this.cookie}`;
    if (body !== undefined) h['content-type'] = 'application/json';
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: h,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    for (const line of res.headers.getSetCookie()) {
      const m = /^switchyard_session=([^;]*)/.exec(line);
      if (m) {
        this.setCookie = line;
        this.cookie = m[1] || undefined;
      }
    }
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, headers: res.headers, body: json };
  }

  post = (path: string, body?: unknown, headers?: Record<string, string>) => this.req('POST', path, body, headers);
  get = (path: string, headers?: Record<string, string>) => this.req('GET', path, undefined, headers);
}

/** The real app with SWITCHYARD_TRUST_PROXY=1 (X-Forwarded-For and -Proto believed), on a loopback port. */
export async function startTrustingApi(): Promise<{ base: string; close(): Promise<void> }> {
  const before = process.env.SWITCHYARD_TRUST_PROXY;
  process.env.SWITCHYARD_TRUST_PROXY = '1';
  const app = createApp();
  if (before === undefined) delete process.env.SWITCHYARD_TRUST_PROXY;
  else process.env.SWITCHYARD_TRUST_PROXY = before;
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}
