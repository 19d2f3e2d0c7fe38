// `npm run bench:peers`: Switchyard against other open-source gateways, in front of the same
// loopback OpenAI-protocol upstream (bench/upstream.ts), with the same chat body, measured in the
// same alternating one-second windows (bench/harness.ts), for non-streaming and streaming chat:
// - the bare proxy (bench/proxy.ts) and the Koa floor (bench/koa-floor.ts), for scale;
// - Switchyard as `npm run api` runs it (compiled, its Node flags), authentication and billing on;
// - Portkey's open-source gateway (npm `@portkey-ai/gateway`), installed on first use into
//   .data/peers/portkey (its own package.json; not the project's dependencies);
// - LiteLLM's proxy (PyPI `litellm[proxy]`), installed on first use into the project's .venv.
// A peer that cannot be installed, started or does not answer like the upstream is left out with
// the reason printed. Each target's throughput, CPU µs per request (its process tree's CPU time,
// from /proc, during its own windows) and RSS after the load are printed, with Switchyard's
// throughput over each peer's and its CPU over the bare proxy's against the performance goals.
// BENCH_PEERS=portkey,litellm picks the peers; BENCH_SECONDS, BENCH_CONCURRENCY and BENCH_ONLY as
// for `npm run bench`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import {
  CONCURRENCY,
  SECONDS,
  chatBody,
  freePort,
  modes,
  pidOf,
  printTable,
  rssMb,
  startExternal,
  startProcess,
  stopProcesses,
  throughputs,
  withBenchDatabase,
} from './harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const peersDir = path.join(root, '.data', 'peers');
const wanted = (process.env.BENCH_PEERS ?? 'portkey,litellm').split(',').map((p) => p.trim().toLowerCase());
const CHAT = '/v1/chat/completions';

/** A gateway measured here: where it listens, how it is called, and what it is. */
interface Target {
  name: string;
  port: string;
  path: string;
  headers?: Record<string, string>;
  keys?: string[];
}
interface Peer extends Target {
  version: string;
  settings: string;
}

/** Run an installer with its output shown; false (with the reason printed) if it fails. */
function install(what: string, command: string, args: string[], cwd: string): boolean {
  console.log(`[peers] installing ${what}: ${command} ${args.join(' ')} (in ${path.relative(root, cwd) || '.'})`);
  const res = spawnSync(command, args, { cwd, stdio: 'inherit' });
  if (res.status === 0) return true;
  console.log(`[peers] ${what} could not be installed (${res.error?.message ?? `exit ${res.status}`})`);
  return false;
}

/** Environment for a peer: ours without settings that would make it use a database or cache. */
function peerEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  for (const name of Object.keys(env)) if (/^(DATABASE_URL|DIRECT_URL|REDIS_|PORT$)/.test(name)) delete env[name];
  return env;
}

// Portkey 1.15's streaming path adds its headers to a response built from the upstream's fetch
// response; with the @hono/node-server npm picks for it (1.19; 1.14.2 too) that response shares the
// upstream's immutable Headers and every streamed request fails with "TypeError: immutable"
// (Portkey-AI/gateway issues 1389 and 1550). 1.13.8, the last 1.13 release, gives it headers of
// its own, as Portkey expects.
const HONO_NODE_SERVER = '1.13.8';

async function startPortkey(upstream: string): Promise<Peer | string> {
  const dir = path.join(peersDir, 'portkey');
  const pkg = (name: string) => path.join(dir, 'node_modules', name, 'package.json');
  const version = (name: string) => (existsSync(pkg(name)) ? JSON.parse(readFileSync(pkg(name), 'utf8')).version : '');
  if (version('@portkey-ai/gateway') === '' || version('@hono/node-server') !== HONO_NODE_SERVER) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'package.json'),
      `${JSON.stringify(
        {
          name: 'switchyard-bench-peer-portkey',
          private: true,
          dependencies: { '@portkey-ai/gateway': '^1.15.2' },
          overrides: { '@hono/node-server': HONO_NODE_SERVER },
        },
        null,
        2,
      )}\n`,
    );
    // --ignore-scripts: its only script is patch-package, with no patches in the published package
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    if (!install('Portkey', npm, ['install', '--no-audit', '--no-fund', '--ignore-scripts'], dir))
      return 'npm install failed';
  }
  const port = await freePort();
  // NODE_ENV=production and --headless, as a deployment runs it: no log console, no per-request
  // log stream. It listens on all interfaces (it has no host setting); it has no authentication.
  await startExternal(
    process.execPath,
    [path.join(dir, 'node_modules/@portkey-ai/gateway/build/start-server.js'), `--port=${port}`, '--headless'],
    {
      port,
      env: peerEnv({ NODE_ENV: 'production' }),
      cwd: dir,
      log: path.join(peersDir, 'portkey.log'),
      timeoutMs: 60_000,
    },
  );
  return {
    name: 'Portkey',
    port,
    path: CHAT,
    // the provider and its address in headers, the upstream's key passed through
    headers: {
      'x-portkey-provider': 'openai',
      'x-portkey-custom-host': `${upstream}/v1`,
      authorization: 'Bearer sk-bench',
    },
    version: `@portkey-ai/gateway ${version('@portkey-ai/gateway')} (@hono/node-server ${version('@hono/node-server')})`,
    settings: 'NODE_ENV=production, --headless; provider and custom host in x-portkey-* headers',
  };
}

async function startLiteLLM(upstream: string): Promise<Peer | string> {
  const venv = path.join(root, '.venv');
  const python = path.join(venv, 'bin', 'python');
  const cli = path.join(venv, 'bin', 'litellm');
  const hasProxy = () =>
    existsSync(cli) &&
    spawnSync(python, ['-c', 'import importlib.util as u,sys; sys.exit(0 if u.find_spec("fastapi") else 1)']).status ===
      0;
  if (!hasProxy()) {
    if (!existsSync(python) && !install('a Python virtualenv', 'python3', ['-m', 'venv', venv], root))
      return 'no virtualenv (python3 -m venv failed)';
    console.log('[peers] LiteLLM with its proxy extras is a large install (several minutes)');
    if (!install('LiteLLM', python, ['-m', 'pip', 'install', '--disable-pip-version-check', 'litellm[proxy]'], root))
      return 'pip install failed';
  }
  const py = (code: string) => spawnSync(python, ['-c', code], { encoding: 'utf8' }).stdout.trim();
  const meta = (name: string) => py(`import importlib.metadata as m; print(m.version("${name}"))`);
  const dir = path.join(peersDir, 'litellm');
  mkdirSync(dir, { recursive: true });
  // LiteLLM refuses to start without a master key; with one (and no database) it checks each
  // request's key against it, as Switchyard checks its keys.
  const masterKey = `sk-bench-${randomBytes(16).toString('hex')}`;
  writeFileSync(
    path.join(dir, 'config.yaml'),
    `# written by bench/peers.ts for one run
model_list:
  - model_name: openai/gpt-4o-mini
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: ${upstream}/v1
      api_key: sk-bench
litellm_settings:
  set_verbose: false
  json_logs: true
  turn_off_message_logging: true
general_settings:
  master_key: ${masterKey}
  disable_spend_logs: true
  disable_error_logs: true
`,
  );
  const port = await freePort();
  await startExternal(cli, ['--config', 'config.yaml', '--host', '127.0.0.1', '--port', port, '--num_workers', '1'], {
    port,
    // PRODUCTION: no .env loading; ERROR: no per-request logs; the local model cost map instead
    // of fetching it from GitHub at start
    env: peerEnv({ LITELLM_MODE: 'PRODUCTION', LITELLM_LOG: 'ERROR', LITELLM_LOCAL_MODEL_COST_MAP: 'True' }),
    cwd: dir,
    log: path.join(peersDir, 'litellm.log'),
    timeoutMs: 180_000,
  });
  return {
    name: 'LiteLLM',
    port,
    path: CHAT,
    headers: { authorization: `Bearer ${masterKey}` },
    version: `litellm ${meta('litellm')} (uvicorn ${meta('uvicorn')}, Python ${py('import platform; print(platform.python_version())')})`,
    settings:
      'one worker (uvicorn), master key, no database; LITELLM_MODE=PRODUCTION, LITELLM_LOG=ERROR, ' +
      'LITELLM_LOCAL_MODEL_COST_MAP=True; json_logs, turn_off_message_logging, disable_spend_logs, disable_error_logs',
  };
}

/** The content of a chat answer, JSON or SSE; throws if it is not a well-formed one. */
async function answer(origin: string, target: Pick<Target, 'path' | 'headers' | 'keys'>, stream: boolean) {
  const res = await request(`${origin}${target.path}`, {
    method: 'POST',
    body: chatBody(stream),
    headers: {
      'content-type': 'application/json',
      ...(target.keys ? { authorization: `Bearer ${target.keys[0]}` } : {}),
      ...target.headers,
    },
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`answered ${res.statusCode}: ${text.slice(0, 300)}`);
  if (!stream) return JSON.parse(text).choices[0].message.content as string;
  if (!String(res.headers['content-type']).startsWith('text/event-stream'))
    throw new Error(`streamed as ${res.headers['content-type']}`);
  const data = text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => l.slice(6));
  if (data.at(-1) !== '[DONE]') throw new Error('the stream does not end with [DONE]');
  return data
    .slice(0, -1)
    .map((d) => JSON.parse(d).choices?.[0]?.delta?.content ?? '')
    .join('');
}

/** Why a target does not answer as the upstream does, non-streaming and streaming; undefined if it does. */
async function check(upstream: string, target: Target): Promise<string | undefined> {
  for (const stream of [false, true]) {
    try {
      const want = await answer(upstream, { path: CHAT }, stream);
      const got = await answer(`http://127.0.0.1:${target.port}`, target, stream);
      if (got !== want)
        return `${stream ? 'streamed' : 'answered'} ${JSON.stringify(got)} instead of ${JSON.stringify(want)}`;
    } catch (err) {
      return `${stream ? 'streaming' : 'non-streaming'}: ${(err as Error).message}`;
    }
  }
  return undefined;
}

await withBenchDatabase(async ({ url: databaseUrl, keys }) => {
  const upPort = await startProcess('./upstream.ts', [], {}, /"port":(\d+)/);
  const upstream = `http://127.0.0.1:${upPort}`;
  const proxyPort = await startProcess('./proxy.ts', [`${upstream}/v1`], {}, /"port":(\d+)/);
  const floorPort = await startProcess('./koa-floor.ts', [`${upstream}/v1`], {}, /"port":(\d+)/);
  const gatewayPort = await startProcess(
    '../bin/api.ts',
    [],
    {
      DATABASE_URL: databaseUrl,
      PORT: '0',
      HOST: '127.0.0.1',
      OPENAI_API_KEY: 'sk-bench',
      OPENAI_BASE_URL: `${upstream}/v1`,
    },
    /listening on 127\.0\.0\.1:(\d+)/,
  );
  const api = '/api/v1/chat/completions';
  const ours: Target[] = [
    { name: 'bare proxy', port: proxyPort, path: api },
    { name: 'Koa floor', port: floorPort, path: api },
    { name: 'Switchyard', port: gatewayPort, path: api, keys },
  ];
  for (const t of ours) {
    const problem = await check(upstream, t);
    if (problem) throw new Error(`${t.name}: ${problem}`);
  }

  const starters: Record<string, (upstream: string) => Promise<Peer | string>> = {
    portkey: startPortkey,
    litellm: startLiteLLM,
  };
  const peers: Peer[] = [];
  const left: string[] = [];
  for (const name of wanted) {
    const start = starters[name];
    if (!start) throw new Error(`BENCH_PEERS: unknown peer "${name}" (portkey, litellm)`);
    const output = `its output: .data/peers/${name}.log`;
    const peer = await start(upstream).catch((err: Error) => `could not start (${err.message}; ${output})`);
    const problem = typeof peer === 'string' ? peer : await check(upstream, peer);
    if (typeof peer === 'string' || problem) {
      left.push(`${name}: ${typeof peer === 'string' ? peer : `${problem} (${output})`}`);
      console.log(`[peers] left out ${left.at(-1)}`);
    } else peers.push(peer);
  }

  const targets: Target[] = [...ours, ...peers];
  const rows: string[][] = [];
  const summary: string[] = [];
  for (const stream of modes()) {
    const body = chatBody(stream);
    const label = stream ? 'streaming' : 'non-streaming';
    await throughputs(targets, api, body, 2); // warm-up
    const results = await throughputs(targets, api, body);
    const rss = targets.map((t) => rssMb(pidOf(t.port)));
    const [proxy] = results;
    for (const [k, t] of targets.entries()) {
      const r = results[k];
      rows.push([
        label,
        t.name,
        r.rps.toFixed(0),
        `${((r.rps / proxy.rps) * 100).toFixed(0)}%`,
        r.cpuUs.toFixed(0),
        `${(r.cpuUs / proxy.cpuUs).toFixed(2)}×`,
        String(rss[k]),
      ]);
    }
    const gateway = results[2];
    const cpuGoal = stream ? 3 : 2.5;
    const cpu = gateway.cpuUs / proxy.cpuUs;
    summary.push(
      `${label}: Switchyard CPU per request ${cpu.toFixed(2)}× the bare proxy's ` +
        `(goal ≤ ${cpuGoal}×: ${cpu <= cpuGoal ? 'met' : 'not met'})`,
    );
    for (const [k, peer] of peers.entries()) {
      const r = results[ours.length + k];
      const goal = peer.name === 'Portkey' ? 5 : 20;
      const ratio = gateway.rps / r.rps;
      summary.push(
        `${label}: Switchyard throughput ${ratio.toFixed(2)}× ${peer.name}'s (goal ≥ ${goal}×: ` +
          `${ratio >= goal ? 'met' : 'not met'}); ${peer.name} uses ${(r.cpuUs / gateway.cpuUs).toFixed(1)}× ` +
          `Switchyard's CPU per request`,
      );
    }
  }

  console.log(
    `\n${CONCURRENCY} concurrent, ${SECONDS} one-second windows each, targets in turn (after 2 each to warm up)`,
  );
  console.log(`Node ${process.version}; Switchyard as \`npm run api\` runs it, billing on, ${keys.length} account(s)`);
  for (const p of peers) console.log(`${p.name}: ${p.version}; ${p.settings}`);
  for (const l of left) console.log(`left out: ${l}`);
  console.log('');
  printTable(['mode', 'target', `req/s @${CONCURRENCY}`, 'of proxy', 'CPU µs/req', 'CPU × proxy', 'RSS MB'], rows);
  console.log('');
  for (const s of summary) console.log(s);
}).catch((err) => {
  console.error(err);
  stopProcesses('SIGTERM');
  process.exit(1);
});
