// Every /api/v1 route also answers under /v1 (the spec's rule): register both with one call.
export function v1(path: string): string[] {
  return [`/api/v1${path}`, `/v1${path}`];
}

/**
 * Where the caller reached the API, for links we hand out (signed media URLs). Not ctx.origin:
 * in Koa 3 that is the request's Origin header. Behind a proxy, SWITCHYARD_TRUST_PROXY=1 makes
 * protocol and host come from X-Forwarded-*; SWITCHYARD_PUBLIC_URL overrides it all (hostedFiles.ts).
 */
export function publicOrigin(ctx: { protocol: string; host: string }): string {
  return `${ctx.protocol}://${ctx.host}`;
}
