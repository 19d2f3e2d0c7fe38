// The shape of a JSON request body, measured on its text before it is parsed: how deep arrays
// and objects nest, and how many values it holds. The parser itself is iterative and survives any
// depth, but much that reads a body afterwards (Ajv, translation, pricing, JSON.stringify)
// recurses; and parsing multiplies memory by what the text holds, not by its size: ten megabytes of
// `{},{},…` become three million objects (over 400 MB), where ten megabytes of text in one string
// stay about ten. Both limits are checked without recursion, so any depth is safe to send.

export interface JsonLimits {
  /** deepest nesting of arrays and objects (`{}` is 1) */
  maxDepth: number;
  /** most values: arrays, objects and the items between their commas */
  maxValues: number;
}

/** What a body past one of the limits is told. */
export function tooComplexMessage(exceeded: 'depth' | 'values', { maxDepth, maxValues }: JsonLimits): string {
  return exceeded === 'depth'
    ? `Request body is nested more than ${maxDepth} levels deep (arrays and objects); flatten it.`
    : `Request body holds more than ${maxValues} values (arrays, objects and their items).`;
}

/** Which limit JSON text exceeds, if any. Malformed text may be miscounted; the parser refuses it anyway. */
export function exceededLimit(text: string, limits: JsonLimits): 'depth' | 'values' | undefined {
  // Native searches alone settle most bodies: the counts of brackets and commas, strings included,
  // bound the depth and the number of values from above.
  const brackets = occurrences(text, '{', limits.maxValues) + occurrences(text, '[', limits.maxValues);
  if (brackets <= limits.maxDepth && brackets + occurrences(text, ',', limits.maxValues) <= limits.maxValues)
    return undefined;
  return scan(text, limits);
}

/** How often `char` occurs in `text`, counting no further than just past `cap`. */
function occurrences(text: string, char: string, cap: number): number {
  let n = 0;
  for (let i = text.indexOf(char); i !== -1 && n <= cap; i = text.indexOf(char, i + 1)) n++;
  return n;
}

/** The exact count, character by character outside strings; strings are skipped whole. */
function scan(text: string, { maxDepth, maxValues }: JsonLimits): 'depth' | 'values' | undefined {
  let depth = 0;
  let values = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = closingQuote(text, i);
      if (i < 0) return undefined;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > maxDepth) return 'depth';
      if (++values > maxValues) return 'values';
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (c === 0x2c /* , */) {
      if (++values > maxValues) return 'values';
    }
  }
  return undefined;
}

/** The index of the quote that closes the string opened at `open`, or -1. */
function closingQuote(text: string, open: number): number {
  let q = text.indexOf('"', open + 1);
  while (q > 0) {
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === 0x5c /* \ */) backslashes++;
    if (backslashes % 2 === 0) return q;
    q = text.indexOf('"', q + 1);
  }
  return -1;
}
