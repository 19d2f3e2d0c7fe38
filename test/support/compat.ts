// The compatibility table (README "Compatibility"): each client test names its client and the
// feature it exercises with `compat(client, feature, fn)`, an ordinary Mocha test whose outcome is
// recorded. After the run, `reports/compatibility.json` holds every outcome (merged with what
// other test files of the same run recorded) and `npm run compat:readme` renders it into the README.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

type Outcome = 'works' | 'fails' | 'client bug';

interface Row {
  client: string;
  feature: string;
  outcome: Outcome;
  note?: string;
}

const REPORT = path.resolve('reports/compatibility.json');
const rows: Row[] = [];

/**
 * A compatibility test. `knownClientBug`: the client itself is wrong here (the note says how); the
 * test then checks that the gateway answered correctly and records the client's failure as its
 * own rather than bending the gateway.
 */
export function compat(client: string, feature: string, fn: () => Promise<void>, knownClientBug?: string): void {
  it(`${client}: ${feature}`, async () => {
    try {
      await fn();
      rows.push({ client, feature, outcome: knownClientBug ? 'client bug' : 'works', note: knownClientBug });
    } catch (err) {
      rows.push({ client, feature, outcome: 'fails', note: (err as Error).message.split('\n')[0]?.slice(0, 160) });
      throw err;
    }
  });
}

/** Merges this file's outcomes into the run's report (call from the suite's `after`). */
export async function saveCompatReport(): Promise<void> {
  await mkdir(path.dirname(REPORT), { recursive: true });
  let earlier: Row[] = [];
  try {
    earlier = JSON.parse(await readFile(REPORT, 'utf8')) as Row[];
  } catch {}
  const key = (r: Row) => `${r.client}\u0000${r.feature}`;
  const mine = new Set(rows.map(key));
  await writeFile(REPORT, JSON.stringify([...earlier.filter((r) => !mine.has(key(r))), ...rows], null, 2));
}
