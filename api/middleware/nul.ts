// NUL characters (U+0000) in caller text. PostgreSQL cannot hold them (text, and `\u0000` in
// jsonb, fail with 22P05), so a string carrying one would fail only when stored: after the upstream
// was called and the charge written. They are refused with 400 where input arrives, before any work:
// JSON bodies in the body reader (middleware/body.ts), path parameters and query strings here,
// for every route (middleware/surface.ts). Headers cannot carry them (Node's parser refuses a NUL).
import type { Middleware } from 'koa';
import { RequestError } from '../../activities/core/errors.js';
import type { AppState } from '../state.js';

/** NUL shown as text, for naming a parameter whose name holds one. */
const visible = (s: string) => s.replace(/\0/g, '\\u0000');

function refusal(param: string | null, inName: boolean): RequestError {
  const where = param ? `'${visible(param)}'` : 'the request body';
  const message = inName
    ? `Invalid parameter name in ${where}: names may not contain the NUL character (\\u0000).`
    : `Invalid value for ${where}: text may not contain the NUL character (\\u0000).`;
  return new RequestError(400, 'invalid_parameter_value', message, { param: param && visible(param) });
}

/**
 * Throws the 400 for the first string (value or key) in a parsed JSON body that holds a NUL,
 * naming it as validation errors do (`messages[0].content`). Iterative: no depth can overflow it.
 */
export function refuseNulInJson(body: unknown, root = ''): void {
  const stack: Array<{ value: unknown; path: string }> = [{ value: body, path: root }];
  while (stack.length) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\0')) throw refusal(path || null, false);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: `${path}[${i}]` });
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i]!;
        const at = path ? `${path}.${key}` : key;
        if (key.includes('\0')) throw refusal(at, true);
        stack.push({ value: item, path: at });
      }
    }
  }
}

/**
 * Path parameters and query strings. Only `%00` decodes to NUL (the router and the query parser
 * turn invalid escapes into text or U+FFFD), so a URL without it costs one substring search.
 */
export const refuseNulInUrl: Middleware<AppState> = (ctx, next) => {
  if (ctx.url.includes('%00')) {
    const params: Record<string, unknown> = (ctx as { params?: Record<string, unknown> }).params ?? {};
    for (const [name, value] of Object.entries(params)) {
      const values = Array.isArray(value) ? value : [value];
      if (values.some((v) => typeof v === 'string' && v.includes('\0'))) throw refusal(name, false);
    }
    for (const [name, value] of Object.entries(ctx.query)) {
      if (name.includes('\0')) throw refusal(name, true);
      const values = Array.isArray(value) ? value : [value];
      if (values.some((v) => v?.includes('\0'))) throw refusal(name, false);
    }
  }
  return next();
};
