// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Chat completions' tools, tool choice and response format read into the internal request's form
// (chat.ts translates the rest), with the checks a schema cannot express and the spec's codes.
import type { ResponseFormat, ToolChoice, ToolSpec } from '../core/types.js';
import { RequestError } from '../core/errors.js';
import { checkJsonSchema, checkStrictSchema } from './jsonSchema.js';

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const bad = (code: string, message: string, param: string | null = null) =>
  new RequestError(400, code, message, { param: param });

export function toolSpecLimit(): number {
  const raw = Number(process.env.TOOL_SPEC_MAX_BYTES);
  return Number.isInteger(raw) && raw > 0 ? raw : 200 * 1024;
}

/** `tools`: function tools only, at most TOOL_SPEC_MAX_BYTES serialized. */
export function parseTools(raw: unknown): ToolSpec[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  let tools = raw;
  if (typeof raw === 'string') {
    try {
      tools = JSON.parse(raw);
    } catch {
      throw bad(
        'invalid_tool_spec_parse',
        "'tools' is a string that is not valid JSON. Send an array of tool objects.",
        'tools',
      );
    }
  }
  if (!Array.isArray(tools))
    throw bad(
      'invalid_tool_spec',
      "'tools' must be an array of {type:'function', function:{name, description?, parameters?}}.",
      'tools',
    );
  const size = Buffer.byteLength(JSON.stringify(tools));
  if (size > toolSpecLimit()) {
    throw new RequestError(
      413,
      'tool_spec_too_large',
      `'tools' is ${size} bytes serialized; the limit is ${toolSpecLimit()}.`,
      { param: 'tools' },
    );
  }
  const names = new Set<string>();
  return tools.map((t: any, i: number) => {
    const at = `tools[${i}]`;
    if (!t || typeof t !== 'object') throw bad('invalid_tool_spec', `${at} must be an object.`, at);
    if (t.type !== 'function')
      throw bad('invalid_tool_spec', `${at}.type must be 'function': only function tools are supported.`, `${at}.type`);
    const f = t.function;
    if (!f || typeof f !== 'object') throw bad('invalid_tool_spec', `${at}.function is required.`, `${at}.function`);
    if (typeof f.name !== 'string' || !TOOL_NAME.test(f.name)) {
      throw bad(
        'invalid_tool_spec',
        `${at}.function.name must be 1-64 letters, digits, '_' or '-'.`,
        `${at}.function.name`,
      );
    }
    if (names.has(f.name)) throw bad('invalid_tool_spec', `Two tools are named '${f.name}'.`, `${at}.function.name`);
    names.add(f.name);
    if (f.description !== undefined && typeof f.description !== 'string')
      throw bad('invalid_tool_spec', `${at}.function.description must be a string.`, `${at}.function.description`);
    if (
      f.parameters !== undefined &&
      (typeof f.parameters !== 'object' || f.parameters === null || Array.isArray(f.parameters))
    ) {
      throw bad(
        'invalid_tool_spec',
        `${at}.function.parameters must be a JSON Schema object.`,
        `${at}.function.parameters`,
      );
    }
    return { name: f.name, description: f.description, parameters: f.parameters };
  });
}

export function parseToolChoice(raw: any, tools: ToolSpec[] | undefined): ToolChoice | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (raw === 'none' || raw === 'auto') return raw;
  if (!tools?.length)
    throw bad(
      'tool_choice_unsupported',
      `tool_choice '${typeof raw === 'string' ? raw : raw.function?.name}' needs 'tools'.`,
      'tool_choice',
    );
  if (raw === 'required') return 'required';
  const name = raw.function.name;
  if (!tools.some((t) => t.name === name))
    throw bad(
      'tool_choice_unsupported',
      `tool_choice names '${name}', which is not in 'tools'.`,
      'tool_choice.function.name',
    );
  return { name };
}

export function parseResponseFormat(raw: any): ResponseFormat | undefined {
  if (!raw) return undefined;
  if (raw.type !== 'json_schema') return { type: raw.type };
  const js = raw.json_schema;
  if (!js || typeof js !== 'object')
    throw bad(
      'invalid_json_schema',
      "response_format.json_schema is required when type is 'json_schema'.",
      'response_format.json_schema',
    );
  if (typeof js.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(js.name)) {
    throw bad(
      'invalid_json_schema',
      'response_format.json_schema.name is required: 1-64 letters, digits, underscores or dashes.',
      'response_format.json_schema.name',
    );
  }
  const schema = js.schema ?? { type: 'object' };
  if (typeof schema !== 'object' || Array.isArray(schema))
    throw bad(
      'invalid_json_schema',
      'response_format.json_schema.schema must be a JSON Schema object.',
      'response_format.json_schema.schema',
    );
  checkJsonSchema(schema, 'response_format.json_schema.schema');
  if (js.strict === true) checkStrictSchema(schema, 'the schema', 'response_format.json_schema.schema');
  return { type: 'json_schema', name: js.name, schema, strict: js.strict === true, description: js.description };
}

/** `cache_control` on a block, tool or system block: a prompt-cache breakpoint, carried to the upstream. */
