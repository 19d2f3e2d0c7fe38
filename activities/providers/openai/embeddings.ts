// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// OpenAI's embeddings API, as OpenAI, OpenRouter, Together, DeepInfra, Fireworks, vLLM, llama.cpp
// server and Ollama speak it: POST {base}/embeddings with `input` (a string array or token
// arrays), `model`, `dimensions`, `user`. The upstream is asked for floats (every compatible
// server has them; base64 is not universal) and the gateway encodes what its caller asked for.
import { upstreamError } from '../../core/errors.js';
import { readJson, send, statusError } from '../http.js';
import type { EmbeddingResult, EmbeddingsAdapter, ProviderTarget } from '../types.js';
import { quirksFor } from './quirks.js';
import { requestHeaders } from './request.js';
import { deadlineOr } from './stream.js';

/** The answer's vectors in input order, or a retryable failure naming what was wrong with it. */
function vectorsOf(providerId: string, json: any, expected: number): number[][] {
  const bad = (why: string) =>
    upstreamError(`the embeddings answer ${why}`, 502, true, { code: 'upstream_bad_response', providerId });
  if (!Array.isArray(json?.data)) throw bad('has no data array');
  if (json.data.length !== expected) throw bad(`has ${json.data.length} vectors for ${expected} inputs`);
  const out: number[][] = new Array(expected);
  for (const item of json.data) {
    const i = item?.index;
    if (!Number.isInteger(i) || i < 0 || i >= expected || out[i]) throw bad(`has a missing or repeated index (${i})`);
    const e = item.embedding;
    const v = typeof e === 'string' ? fromBase64(e) : e;
    if (!Array.isArray(v) || v.length === 0 || !v.every((x: unknown) => typeof x === 'number' && Number.isFinite(x)))
      throw bad(`has a vector that is not a list of numbers at index ${i}`);
    out[i] = v;
  }
  if (new Set(out.map((v) => v.length)).size !== 1) throw bad('has vectors of different lengths');
  return out;
}

/** A base64 vector (little-endian float32s), as servers that ignore `encoding_format: float` answer. */
function fromBase64(b64: string): number[] {
  const bytes = Buffer.from(b64, 'base64');
  const out: number[] = [];
  for (let i = 0; i + 4 <= bytes.length; i += 4) out.push(bytes.readFloatLE(i));
  return out;
}

export const openaiEmbeddings: EmbeddingsAdapter = {
  async embed(req, target: ProviderTarget, signal): Promise<EmbeddingResult> {
    const body: Record<string, unknown> = { model: req.model, input: req.input, encoding_format: 'float' };
    if (req.dimensions !== undefined) body.dimensions = req.dimensions;
    if (req.user !== undefined) body.user = req.user;
    const q = quirksFor(target.providerId, target.options);
    const res = await send(target.providerId, `${target.baseUrl.replace(/\/+$/, '')}/embeddings`, {
      headers: requestHeaders(target, q, false),
      body: JSON.stringify(body),
      signal,
    }).catch((err) => {
      throw deadlineOr(target.providerId, err, signal);
    });
    if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
    const json = await readJson(target.providerId, res).catch((err) => {
      throw deadlineOr(target.providerId, err, signal);
    });
    const tokens = json?.usage?.prompt_tokens;
    return {
      vectors: vectorsOf(target.providerId, json, req.input.length),
      promptTokens: Number.isInteger(tokens) && tokens >= 0 ? tokens : null,
    };
  },
};
