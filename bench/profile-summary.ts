// `npx tsx bench/profile-summary.ts <file.cpuprofile>...`: where a gateway profile's CPU went, as
// shares of its samples (which the machine's load changes far less than it changes CPU per request):
// the heaviest functions by self time, and a few groups by inclusive time (any sample with such a
// frame on its stack), e.g. router matching, pg queries, JSON.parse. Idle samples are left out.
import { readFileSync } from 'node:fs';

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: Frame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

/** Groups counted by inclusive time: a sample counts if any frame of its stack is in the group. */
const GROUPS: Record<string, (f: Frame) => boolean> = {
  'router matching (@koa/router match)': (f) => f.url.includes('@koa/router') && f.functionName === 'match',
  'pg (queries, parsing replies)': (f) => /node_modules\/pg(-[a-z]+)?\//.test(f.url),
  'JSON.parse': (f) => f.functionName === 'parse' && f.url === '',
  'JSON.stringify': (f) => f.functionName === 'stringify' && f.url === '',
  'garbage collection': (f) => f.functionName === '(garbage collector)',
  'stream reading (providers/openai/stream readStream)': (f) => f.functionName === 'readStream',
  'new URL': (f) => f.functionName === 'URL' && f.url === 'node:internal/url',
  'key hashing (sha256)': (f) => f.functionName === 'hashKey',
};

const IDLE = new Set(['(idle)', '(program)']);

for (const file of process.argv.slice(2)) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const self = new Map<string, number>();
  const groups = new Map<string, number>(Object.keys(GROUPS).map((g) => [g, 0]));
  let busy = 0;
  for (const id of profile.samples) {
    const node = byId.get(id)!;
    if (IDLE.has(node.callFrame.functionName)) continue;
    busy++;
    const f = node.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '~/').replace(/^file:\/\/.*?\/(api|activities|bin|dist)\//, '$1/')}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + 1);
    const hit = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame;
      for (const [g, test] of Object.entries(GROUPS)) if (!hit.has(g) && test(frame)) hit.add(g);
    }
    for (const g of hit) groups.set(g, groups.get(g)! + 1);
  }
  const pct = (n: number) => `${((n / busy) * 100).toFixed(1).padStart(5)}%`;
  console.log(`\n${file}: ${busy} busy samples`);
  for (const [g, n] of groups) console.log(`  ${pct(n)}  ${g}`);
  console.log('  heaviest by self time:');
  for (const [k, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 25)))
    console.log(`  ${pct(n)}  ${k}`);
}
