// The labelled redaction set (test/fixtures/redaction/*.jsonl) and how detection is scored on it,
// shared by `npm run bench:redaction` and the test that holds the figures to their goals.
//
// A line is {id, text}, where each piece of personal data or credential is written in place as
// [[category:value]]; the markup is taken out to get the message and its labelled spans.
// Scoring, per category: a labelled span is found (recall) when spans detected as that category
// cover at least 80% of its letters and digits (a name or address masked all but a stray
// word still counts, one masked by half does not); a detected span is right (precision) when at
// least half of its letters and digits lie in labelled spans of its category.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Category, Span } from '../../activities/redaction/rules.js';

export interface LabelledMessage {
  id: string;
  text: string;
  spans: Span[];
}

const DIR = fileURLToPath(new URL('../fixtures/redaction/', import.meta.url));
const MARK = /\[\[([a-z_]+):([\s\S]*?)\]\]/g;

export function loadRedactionSet(): LabelledMessage[] {
  const out: LabelledMessage[] = [];
  for (const file of readdirSync(DIR)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()) {
    for (const line of readFileSync(path.join(DIR, file), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const { id, text: marked } = JSON.parse(line) as { id: string; text: string };
      let text = '';
      let last = 0;
      const spans: Span[] = [];
      for (const m of marked.matchAll(MARK)) {
        text += marked.slice(last, m.index);
        spans.push({ start: text.length, end: text.length + m[2].length, category: m[1] as Category });
        text += m[2];
        last = m.index + m[0].length;
      }
      out.push({ id, text: text + marked.slice(last), spans });
    }
  }
  return out;
}

export interface CategoryScore {
  category: Category;
  labelled: number;
  found: number;
  detected: number;
  right: number;
  recall: number;
  precision: number;
}

const isWordChar = (c: string) => /[\p{L}\p{N}]/u.test(c);

/** Share of the letters and digits of `s` that lie inside `cover` (spans of the same text). */
function covered(text: string, s: Span, cover: Span[]): number {
  let total = 0;
  let inside = 0;
  for (let i = s.start; i < s.end; i++) {
    if (!isWordChar(text[i])) continue;
    total++;
    if (cover.some((c) => c.start <= i && i < c.end)) inside++;
  }
  return total === 0 ? 0 : inside / total;
}

export interface Miss {
  id: string;
  kind: 'missed' | 'wrong';
  category: Category;
  value: string;
}

export function score(
  set: LabelledMessage[],
  detected: Map<string, Span[]>,
): { scores: CategoryScore[]; misses: Miss[] } {
  const by = new Map<Category, CategoryScore>();
  const misses: Miss[] = [];
  const entry = (category: Category) => {
    let s = by.get(category);
    if (!s) {
      s = { category, labelled: 0, found: 0, detected: 0, right: 0, recall: 1, precision: 1 };
      by.set(category, s);
    }
    return s;
  };
  for (const m of set) {
    const found = detected.get(m.id) ?? [];
    for (const gold of m.spans) {
      const s = entry(gold.category);
      s.labelled++;
      const same = found.filter((f) => f.category === gold.category);
      if (covered(m.text, gold, same) >= 0.8) s.found++;
      else
        misses.push({ id: m.id, kind: 'missed', category: gold.category, value: m.text.slice(gold.start, gold.end) });
    }
    for (const f of found) {
      const s = entry(f.category);
      s.detected++;
      const same = m.spans.filter((g) => g.category === f.category);
      if (covered(m.text, f, same) >= 0.5) s.right++;
      else misses.push({ id: m.id, kind: 'wrong', category: f.category, value: m.text.slice(f.start, f.end) });
    }
  }
  const scores = [...by.values()].map((s) => ({
    ...s,
    recall: s.labelled ? s.found / s.labelled : 1,
    precision: s.detected ? s.right / s.detected : 1,
  }));
  return { scores, misses };
}

/** The goals of issue 17: structured categories, names and addresses, and precision everywhere. */
export const GOALS: Record<Category, { recall: number; precision: number }> = {
  email: { recall: 0.95, precision: 0.9 },
  phone: { recall: 0.95, precision: 0.9 },
  ssn: { recall: 0.95, precision: 0.9 },
  card: { recall: 0.95, precision: 0.9 },
  ip: { recall: 0.95, precision: 0.9 },
  dob: { recall: 0.95, precision: 0.9 },
  address: { recall: 0.85, precision: 0.9 },
  name: { recall: 0.85, precision: 0.9 },
  api_key: { recall: 0.95, precision: 0.9 },
  token: { recall: 0.95, precision: 0.9 },
  private_key: { recall: 0.95, precision: 0.9 },
  password: { recall: 0.95, precision: 0.9 },
};
