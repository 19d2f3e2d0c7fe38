// biome-ignore-all lint/suspicious/noExplicitAny: row bodies are wire JSON, read field by field
// The spec's rules for a batch's rows, one implementation for every batch kind: inline batches
// check them in the API before answering 202 (a refusal names `requests[i]`), file-backed ones
// inside the workflow while `validating` (a refusal names the file's line). A row passes only if
// the synchronous route would accept it: after the batch rules, it is translated exactly as the
// synchronous route translates it. Refusals carry the spec's codes: `unsupported_model` for a model
// that cannot run the batch's rows, `unsupported_batch_input` for what a batch (or the model's
// class, in a batch) cannot carry out, otherwise the synchronous route's own.
import { Ajv, type ValidateFunction } from 'ajv';
import { catalog, type ModelInfo } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import { resolveModel } from '../catalog/resolve.js';
import { redactionSuffix } from '../redaction/policy.js';
import { parseModelName } from '../routing/suffixes.js';
import { webSearchSettings } from '../search/settings.js';
import type { RowKind } from './rowKind.js';

export interface RowProblem {
  /** 0-based position of the row */
  index: number;
  code: string;
  message: string;
  /** the field at fault inside the row's body, when there is one */
  param?: string;
}

const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false });
const compiled = new Map<object, ValidateFunction>();

/** The row's body against its endpoint's synchronous schema: why it fails, or undefined. */
function schemaProblem(kind: RowKind, body: unknown): { message: string; param?: string } | undefined {
  let validate = compiled.get(kind.schema);
  if (!validate) {
    validate = ajv.compile(kind.schema);
    compiled.set(kind.schema, validate);
  }
  if (validate(body)) return undefined;
  const e = validate.errors![0];
  const at = e.instancePath.slice(1).replace(/\//g, '.');
  const missing = (e.params as { missingProperty?: string }).missingProperty;
  const param = [at, missing].filter(Boolean).join('.') || undefined;
  return { message: `${param ? `'${param}' ` : 'the body '}${e.message}.`, param };
}

/** Batch rows take no add-ons such as web search (the spec): refused rather than run without it. */
const NO_WEB_SEARCH =
  'Batch rows take no add-ons such as web search: remove the :online suffix and web_search / web_search_options, or send the request synchronously.';

/**
 * Batch rows are not redacted: a redaction suffix on the batch's or a row's model is refused rather
 * than run unmasked (the header and the caller's default are refused where the batch is created).
 */
const noRedaction = (suffix: string) =>
  `The '${suffix}' model suffix asks for PII redaction, which batches do not offer: refused rather than run unredacted. Remove the suffix, or send the requests synchronously (the text routes redact).`;

/**
 * Why the batch's chat model cannot run rows of this kind (the spec's `unsupported_model`), or
 * undefined. Catalog-driven: a model whose catalog entry lists `supported_batch_endpoints` is
 * batched on those only, any other on the endpoints it serves synchronously (`supported_endpoints`).
 */
function modelRefusal(kind: RowKind, model: ModelInfo): string | undefined {
  const served = model.supportedBatchEndpoints.length ? model.supportedBatchEndpoints : model.supportedEndpoints;
  if (served.length && !served.includes(kind.endpoint))
    return `'${model.id}' does not take ${kind.endpoint} rows in a batch; it takes ${served.filter((e) => e in ROW_ENDPOINTS).join(', ') || 'none'}.`;
  return undefined;
}

/** The endpoints a batch row can name, for the message above. */
const ROW_ENDPOINTS = { '/v1/chat/completions': 1, '/v1/responses': 1, '/v1/messages': 1 };

/**
 * The per-model-class row rules (spec "Row rules": some model classes take no tools, functions,
 * `response_format` or structured outputs). A model's class is what its catalog entry says it can
 * do: tools need `tool_calling`, a JSON response format (schema or object) needs
 * `structured_output`. A row asking for what its model's class lacks is refused at creation
 * (`unsupported_batch_input`) rather than failing, or being answered without it, hours later.
 */
function classRefusal(
  model: ModelInfo,
  needs: { tools: boolean; structuredOutput: boolean },
  body: any,
): { message: string; param: string } | undefined {
  if (needs.tools && model.capabilities.tool_calling !== true)
    return {
      message: `'${model.id}' takes no tools in a batch row (its catalog entry has no tool calling): remove 'tools'.`,
      param: 'tools',
    };
  const format = [
    ['response_format', body.response_format?.type],
    ['text.format', body.text?.format?.type],
    ['output_config.format', body.output_config?.format?.type],
  ].find(([, type]) => type === 'json_object' || type === 'json_schema');
  if ((needs.structuredOutput || format) && model.capabilities.structured_output !== true) {
    const param = format?.[0] ?? 'response_format';
    return {
      message: `'${model.id}' takes no structured output in a batch row (its catalog entry has none): remove '${param}'.`,
      param,
    };
  }
  return undefined;
}

/** The batch's model (every row must name it, or none for inline rows), resolved once. */
export function batchModel(name: string): ModelInfo {
  // batch rows are chat requests: any other kind of model is the spec's unsupported_model
  const named = catalog().model(parseModelName(name, (n) => catalog().model(n) !== undefined).base);
  if (named && named.category !== 'chat')
    throw new RequestError(
      400,
      'unsupported_model',
      `'${named.id}' is a ${named.category} model; batches run chat models only (GET /api/v1/models?detailed=true lists them).`,
      { param: 'model' },
    );
  const { model, name: parsed } = resolveModel(name);
  if (parsed.online) throw new RequestError(400, 'invalid_parameter_value', NO_WEB_SEARCH, { param: 'model' });
  const redaction = redactionSuffix(parsed);
  if (redaction) throw new RequestError(400, 'invalid_parameter_value', noRedaction(redaction), { param: 'model' });
  return model;
}

/**
 * Check one row's body against the batch: its model, the spec's row rules, and the synchronous
 * route's own translation. `defaultCap`: the cap an inline row gets when it sets none (file-backed
 * rows must set one). Returns the body as it will run (model and cap filled in), or the problem.
 */
export function checkRow(
  kind: RowKind,
  index: number,
  body: any,
  model: ModelInfo,
  defaultCap?: number,
): { body: Record<string, any> } | { problem: RowProblem } {
  const refuse = (message: string, param?: string, code = 'invalid_parameter_value') => ({
    problem: { index, code, message, param },
  });
  const unservable = modelRefusal(kind, model);
  if (unservable) return refuse(unservable, 'model', 'unsupported_model');
  if (!body || typeof body !== 'object' || Array.isArray(body)) return refuse("The row's 'body' must be an object.");
  if (body.stream === true) return refuse("Batch rows are not streamed: remove 'stream: true'.", 'stream');
  if (body.model !== undefined && body.model !== null) {
    if (typeof body.model !== 'string') return refuse("'model' must be a string.", 'model');
    const named = catalog().model(parseModelName(body.model, (n) => catalog().model(n) !== undefined).base);
    if (named?.id !== model.id)
      return refuse(
        `Every row of a batch uses the batch's one model ('${model.id}'); this row names '${body.model}'.`,
        'model',
      );
  }
  const why = kind.refusal(body);
  if (why) return refuse(why);
  const unsupported = kind.unsupported?.(body);
  if (unsupported) return refuse(unsupported.message, unsupported.param, 'unsupported_batch_input');
  try {
    const name = parseModelName(String(body.model ?? model.id), (n) => catalog().model(n) !== undefined);
    const web = webSearchSettings(name, body);
    if (web) return refuse(NO_WEB_SEARCH, web.source.startsWith('the') ? 'model' : web.source.replace(/'/g, ''));
    const redaction = redactionSuffix(name);
    if (redaction) return refuse(noRedaction(redaction), 'model');
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    return refuse(err.message, err.opts.param ?? undefined, err.code);
  }
  let cap = kind.outputCap(body);
  if (cap === undefined || cap === null) {
    if (defaultCap === undefined)
      return refuse(
        `An output cap is required in every row of a file-backed batch: set '${kind.capField}'.`,
        kind.capField,
        'missing_required_parameter',
      );
    cap = defaultCap;
  }
  const row = { ...body, model: body.model ?? model.id, [kind.capField]: cap };
  const invalid = schemaProblem(kind, row);
  if (invalid) return refuse(invalid.message, invalid.param);
  let needs: { tools: boolean; structuredOutput: boolean };
  try {
    ({ needs } = kind.translate(
      row,
      model,
      parseModelName(row.model, (n) => catalog().model(n) !== undefined),
    ));
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    return refuse(err.message, err.opts.param ?? undefined, err.code);
  }
  const lacking = classRefusal(model, needs, row);
  if (lacking) return refuse(lacking.message, lacking.param, 'unsupported_batch_input');
  return { body: row };
}

/** The output cap a checked row runs with. */
export function capOf(kind: RowKind, body: Record<string, any>): number {
  return Number(kind.outputCap(body) ?? 0);
}
