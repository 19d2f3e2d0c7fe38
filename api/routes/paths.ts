// Every /api/v1 route also answers under /v1 (the spec's rule): register both with one call.
export function v1(path: string): string[] {
  return [`/api/v1${path}`, `/v1${path}`];
}
