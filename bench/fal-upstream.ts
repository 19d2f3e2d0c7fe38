// The loopback fal queue server (test/support/upstreams/fal.ts, the real queue protocol) as a
// process of its own for the job benchmark, so its work is not counted against the gateway or the
// worker. Every job it takes stays IN_PROGRESS (it never finishes): the jobs a benchmark submits
// stay in flight, each workflow polling it, for as long as the benchmark runs.
import { startFalUpstream } from '../test/support/upstreams/fal.js';

const fal = await startFalUpstream(process.argv[2]);
fal.setDefault({ queuePolls: 1, outcome: 'hang' });
console.log(JSON.stringify({ port: Number(new URL(fal.url).port), apiKey: fal.apiKey }));
