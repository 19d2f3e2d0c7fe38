// Renders the compatibility table from the last client test run (reports/compatibility.json,
// written by test/clients*.test.ts through test/support/compat.ts) into README.md, between the
// `<!-- compat:begin -->` and `<!-- compat:end -->` markers: one row per client, one column per
// feature. `npm run compat:readme` runs the client tests, then this.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

interface Row {
  client: string;
  feature: string;
  outcome: 'works' | 'fails' | 'client bug';
  note?: string;
}

const BEGIN = '<!-- compat:begin -->';
const END = '<!-- compat:end -->';
const MARK = { works: '✅', fails: '❌', 'client bug': '⚠️' } as const;

/** Features as columns, grouped so similar ones sit together (`chat (Responses API)` under chat). */
const family = (feature: string) => feature.split(' (')[0]!;

export function renderTable(rows: Row[]): string {
  const families = [...new Set(rows.map((r) => family(r.feature)))];
  const clients = [...new Set(rows.map((r) => r.client))];
  const notes: string[] = [];
  const cell = (client: string, fam: string) => {
    const mine = rows.filter((r) => r.client === client && family(r.feature) === fam);
    if (!mine.length) return '';
    return mine
      .map((r) => {
        const variant = r.feature === fam ? '' : ` ${r.feature.slice(fam.length + 1)}`;
        if (r.note && r.outcome !== 'works') notes.push(`${client}, ${r.feature}: ${r.note}`);
        return `${MARK[r.outcome]}${variant}`;
      })
      .join('<br>');
  };
  const lines = [
    `| client | ${families.join(' | ')} |`,
    `| --- | ${families.map(() => '---').join(' | ')} |`,
    ...clients.map((c) => `| ${c} | ${families.map((f) => cell(c, f)).join(' | ')} |`),
  ];
  if (notes.length) lines.push('', ...notes.map((n) => `- ${n}`));
  return lines.join('\n');
}

async function main() {
  const rows = JSON.parse(await readFile(path.resolve('reports/compatibility.json'), 'utf8')) as Row[];
  const readme = await readFile('README.md', 'utf8');
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md has no ${BEGIN} ... ${END} section`);
  const table = renderTable(rows);
  await writeFile('README.md', `${readme.slice(0, start + BEGIN.length)}\n${table}\n${readme.slice(end)}`);
  console.log(
    `compatibility table: ${rows.length} checks, ${rows.filter((r) => r.outcome === 'fails').length} failing`,
  );
}

await main();
