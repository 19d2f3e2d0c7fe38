// `npm run bench:redaction`: recall and precision of the redaction layer's detection
// (activities/redaction/detect.ts) per category on the labelled set in test/fixtures/redaction/
// (scoring rules in test/support/redactionSet.ts), and how long detection took. `--misses` lists
// what was missed and what was masked wrongly.
import { detect } from '../activities/redaction/detect.js';
import type { Span } from '../activities/redaction/rules.js';
import { type CategoryScore, GOALS, loadRedactionSet, score } from '../test/support/redactionSet.js';

const set = loadRedactionSet();
const detected = new Map<string, Span[]>();
await detect('warm up: jane@example.com');
const t0 = performance.now();
for (const m of set) detected.set(m.id, await detect(m.text));
const ms = performance.now() - t0;
const { scores, misses } = score(set, detected);

const pct = (x: number) => x.toFixed(3);
console.log(
  `${set.length} messages, ${set.reduce((n, m) => n + m.spans.length, 0)} labelled spans, ` +
    `detection ${(ms / set.length).toFixed(1)} ms per message on average\n`,
);
function table(title: string, rows: CategoryScore[]): void {
  console.log(`${title}\n`);
  console.log('| category | labelled | recall | precision | goal (recall / precision) |');
  console.log('| --- | ---: | ---: | ---: | --- |');
  for (const s of rows.sort((a, b) => a.category.localeCompare(b.category))) {
    const g = GOALS[s.category];
    const ok = s.recall >= g.recall && s.precision >= g.precision ? '' : ' **below goal**';
    console.log(
      `| ${s.category} | ${s.labelled} | ${pct(s.recall)} | ${pct(s.precision)} | ${g.recall} / ${g.precision}${ok} |`,
    );
  }
  console.log('');
}
table('Whole set', scores);
// holdout.jsonl was written after the rules were tuned on the other files, and scored as it came
const holdout = set.filter((m) => m.id.startsWith('holdout-'));
table(`Held-out part (${holdout.length} messages)`, score(holdout, detected).scores);
if (process.argv.includes('--misses')) {
  console.log('');
  for (const m of misses)
    console.log(`${m.kind.padEnd(7)} ${m.category.padEnd(8)} ${m.id}: ${JSON.stringify(m.value)}`);
}
