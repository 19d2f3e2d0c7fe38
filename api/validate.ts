// Ajv, compiled once per schema at start-up. Bodies are validated strictly as sent (no type
// coercion: "2" is not 2); query strings arrive as text, so their validator coerces. The first
// failure becomes one 400 naming the parameter, in the spec's codes.
import { Ajv, type ErrorObject, type Schema, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Middleware } from 'koa';
import { RequestError } from '../activities/core/errors.js';
import type { AppState } from './state.js';

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

const bodyAjv = addFormats(new Ajv({ allErrors: false, strict: false, coerceTypes: false }));
const queryAjv = addFormats(new Ajv({ allErrors: false, strict: false, coerceTypes: true, useDefaults: true }));

/** `/messages/0/role` → `messages[0].role` */
function paramPath(instancePath: string, extra?: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra) parts.push(extra);
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

function toValidationError(e: ErrorObject): RequestError {
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'required') {
    const param = paramPath(e.instancePath, String(p.missingProperty));
    return new RequestError(400, 'missing_required_parameter', `Missing required parameter: '${param}'.`, { param });
  }
  const param = paramPath(e.instancePath);
  const where = param ? `'${param}'` : 'the request body';
  let detail: string;
  switch (e.keyword) {
    case 'type':
      detail = `expected ${String(p.type).replace(',', ' or ')}`;
      break;
    case 'enum':
      detail = `expected one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
      break;
    case 'additionalProperties':
      return new RequestError(
        400,
        'invalid_parameter_value',
        `Unrecognized parameter: '${paramPath(e.instancePath, String(p.additionalProperty))}'.`,
        {
          param: paramPath(e.instancePath, String(p.additionalProperty)),
        },
      );
    default:
      detail = e.message ?? 'invalid';
  }
  return new RequestError(400, 'invalid_parameter_value', `Invalid value for ${where}: ${detail}.`, {
    param: param || null,
  });
}

function check(validate: ValidateFunction, data: unknown, status = 400): void {
  if (validate(data)) return;
  const err = toValidationError(validate.errors![0]);
  // the teams-style surfaces (session routes) answer validation failures with 422 INVALID_INPUT (spec, Errors)
  throw status === 400 ? err : new RequestError(status, err.code, err.message, err.opts);
}

/** The status a failed schema check gets on this route's surface. */
const validationStatus = (ctx: { state: AppState }) => (ctx.state.envelope === 'teams' ? 422 : 400);

// Which schema each validating middleware checks, so a route's contract can be read off the router
// (the fuzz suite derives its requests from it: test/fuzz/).
const declared = new WeakMap<object, { where: 'body' | 'query' | 'multipart'; schema: Schema }>();

/** The body or query schema a route's middleware validates, if it is a validator. */
export function declaredSchema(
  middleware: unknown,
): { where: 'body' | 'query' | 'multipart'; schema: Schema } | undefined {
  return typeof middleware === 'function' ? declared.get(middleware) : undefined;
}

/** Validate ctx.request.body before the route runs; the route then trusts its shape. */
export function validateBody(schema: Schema): Middleware<AppState> {
  const validate = bodyAjv.compile(schema);
  const middleware: Middleware<AppState> = (ctx, next) => {
    // a body left to be read as it arrives is checked by its route as it reads it (streamedBody)
    if (ctx.request.streamedBody) return next();
    const body = (ctx.request as { body?: unknown }).body;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new RequestError(400, 'invalid_json', 'Request body must be a JSON object.');
    }
    check(validate, body, validationStatus(ctx));
    return next();
  };
  declared.set(middleware, { where: 'body', schema });
  return middleware;
}

/**
 * The checks of `schema` (a body with one array field `arrayKey`) for a body read as it arrives:
 * `item` checks one item of the array as it comes, `rest` the body once read, with the array's
 * items already checked (`items` of them: undefined if the field was absent or not an array).
 * The same refusals, naming the same parameters, as the whole body's check.
 */
export function streamedBodyChecks(schema: { properties: Record<string, object> }, arrayKey: string) {
  const { items, ...array } = schema.properties[arrayKey] as { items: Schema };
  const validateItem = bodyAjv.compile(items);
  const validateRest = bodyAjv.compile({ ...schema, properties: { ...schema.properties, [arrayKey]: array } });
  return {
    item(value: unknown, index: number): void {
      if (validateItem(value)) return;
      const e = validateItem.errors![0]!;
      throw toValidationError({ ...e, instancePath: `/${arrayKey}/${index}${e.instancePath}` });
    },
    rest(fields: Record<string, unknown>, count: number | undefined): void {
      // the items were checked one by one: only their number counts here
      check(validateRest, count === undefined ? fields : { ...fields, [arrayKey]: new Array(count) });
    },
  };
}

/** Validate (and coerce, and default) ctx.query; the result is left on ctx.state.query. */
export function validateQuery(schema: Schema): Middleware<AppState> {
  const validate = queryAjv.compile(schema);
  const middleware: Middleware<AppState> = async (ctx, next) => {
    const query: Record<string, unknown> = { ...ctx.query };
    check(validate, query, validationStatus(ctx));
    ctx.state.query = query;
    await next();
  };
  declared.set(middleware, { where: 'query', schema });
  return middleware;
}

/**
 * Declares the fields of a multipart form that the route reads itself, as it streams (a file is
 * never a parsed body): the middleware only records the contract for the router's readers; the
 * route's form reader checks the fields against the same schema (api/uploadForm.ts).
 */
export function declareMultipart(schema: Schema): Middleware<AppState> {
  const middleware: Middleware<AppState> = (_ctx, next) => next();
  declared.set(middleware, { where: 'multipart', schema });
  return middleware;
}
