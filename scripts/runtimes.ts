/**
 * `npm run test:runtimes`: the built package (dist/) under Bun and Deno, each from its npm package
 * (devDependencies `bun` and `deno`), against a throwaway redis-server:
 * - roundtrip: a producer and a worker in one Bun/Deno process, with retries and a dead job, none early;
 * - crash: a Bun/Deno worker killed (SIGKILL) while it holds a job added by the CLI run under the
 *   same runtime; another Bun/Deno worker recovers it on its second attempt;
 * - cli: `delayq stats` and `delayq ls` under the runtime, read back as JSON;
 * - dashboard: `.fetch` under Bun.serve / Deno.serve at a sub-path: a page, an API read, and an
 *   unauthenticated POST refused;
 * - cli worker: `delayq worker` on test/runtimes/handlers.mjs runs a job that fails once, and the
 *   dashboard it serves (the CLI's node:http server) answers its API and /metrics.
 * Prints the runtimes' versions and one line per check, ends with `runtimes: N passed, N failed`.
 */
import { spawn, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Queue } from '../src/index.js';
import { startRedis, type RedisServer } from '../src/testing/index.js';
import { awaitReady, captureOutput } from '../test/support/ready-line.js';

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));
const BIN = here('../node_modules/.bin/');
const FIXTURES = here('../test/runtimes/');
const CLI = here('../dist/cli/main.js');
/** The child scripts import the package from here, relative to themselves. */
const DELAYQ_ROOT = '../../dist/';
const TOKEN = 'runtimes-dashboard-token-0123';

interface Runtime {
  name: 'bun' | 'deno';
  /** The command line that runs a script file. */
  run(script: string): [string, string[]];
}

const runtimes: Runtime[] = [
  { name: 'bun', run: (script) => [`${BIN}bun`, [script]] },
  // The project's node_modules as it is (npm installed it): no Deno-side install step.
  { name: 'deno', run: (script) => [`${BIN}deno`, ['run', '-A', '--node-modules-dir=manual', script]] },
];

type Child = ReturnType<typeof start>;

function start(runtime: Runtime, script: string, env: Record<string, string>, scriptArgs: string[] = []) {
  const [command, args] = runtime.run(script);
  const child = spawn(command, [...args, ...scriptArgs], {
    env: { ...process.env, DELAYQ_ROOT, DELAYQ_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, output: captureOutput(child) };
}

/** Resolve once `child` prints a line matching `pattern`, or reject after `timeoutMs`. */
function line(c: Child, pattern: RegExp, timeoutMs: number, what: string): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const match = pattern.exec(c.output());
      if (match) done(null, match);
    };
    const done = (err: Error | null, match?: RegExpExecArray): void => {
      clearTimeout(timer);
      c.child.stdout.off('data', check);
      if (err) reject(err);
      else resolve(match!);
    };
    const timer = setTimeout(
      () => done(new Error(`no ${what} within ${timeoutMs} ms; output:\n${c.output()}`)),
      timeoutMs,
    );
    c.child.stdout.on('data', check);
    check();
  });
}

async function exitOf(c: Child, timeoutMs: number): Promise<number | null> {
  const timer = setTimeout(() => c.child.kill('SIGKILL'), timeoutMs);
  const { code } = await c.exited;
  clearTimeout(timer);
  return code;
}

function cli(runtime: Runtime, url: string, args: string[]): string {
  const [command, runArgs] = runtime.run(CLI);
  return execFileSync(command, [...runArgs, '--redis', url, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, DELAYQ_LOG_LEVEL: 'warn' },
  });
}

async function roundtrip(runtime: Runtime, url: string): Promise<string> {
  const c = start(runtime, `${FIXTURES}roundtrip.ts`, { REDIS_URL: url, QUEUE: `rt-${runtime.name}` });
  const code = await exitOf(c, 60_000);
  const result = /^result (\{.*\})$/m.exec(c.output());
  if (code !== 0 || !result) throw new Error(`exit ${code}; output:\n${c.output()}`);
  const r = JSON.parse(result[1]!) as { jobs: number; retried: number; dead: number; early: number };
  return `${r.jobs} jobs, ${r.retried} retried, ${r.dead} dead, ${r.early} early`;
}

async function crash(runtime: Runtime, url: string): Promise<string> {
  const queue = `crash-${runtime.name}`;
  const env = { REDIS_URL: url, QUEUE: queue };
  const doomed = start(runtime, `${FIXTURES}crash-worker.ts`, { ...env, MODE: 'hang' });
  let rescuer: Child | undefined;
  try {
    await awaitReady(doomed.child, doomed.exited, doomed.output, { what: 'worker', timeoutMs: 30_000 });
    cli(runtime, url, ['add', queue, '{"order":42}', '--id', 'order-42', '--attempts', '3']);
    await line(doomed, /^claimed order-42$/m, 15_000, 'claim');
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    rescuer = start(runtime, `${FIXTURES}crash-worker.ts`, { ...env, MODE: 'finish' });
    const done = await line(rescuer, /^completed order-42 attempt (\d+)$/m, 20_000, 'recovery');
    if (done[1] !== '2') throw new Error(`recovered on attempt ${done[1]}, expected 2`);
    rescuer.child.kill('SIGTERM');
    const code = await exitOf(rescuer, 10_000);
    if (code !== 0) throw new Error(`the rescuing worker exited ${code} on SIGTERM`);
    const q = new Queue(queue, { connection: url });
    const counts = await q.counts();
    await q.close();
    if (counts.scheduled + counts.active + counts.dead !== 0)
      throw new Error(`left ${JSON.stringify(counts)}`);
    return 'killed holding order-42; recovered on attempt 2 by a new worker; graceful SIGTERM';
  } finally {
    if (doomed.child.exitCode === null && doomed.child.signalCode === null) doomed.child.kill('SIGKILL');
    if (rescuer && rescuer.child.exitCode === null && rescuer.child.signalCode === null) {
      rescuer.child.kill('SIGKILL');
    }
  }
}

function cliReads(runtime: Runtime, url: string): string {
  const queue = `rt-${runtime.name}`;
  const stats = JSON.parse(cli(runtime, url, ['--json', 'stats', queue])) as { counts: { dead: number } };
  if (stats.counts.dead !== 1) throw new Error(`stats: ${JSON.stringify(stats)}`);
  const ls = JSON.parse(cli(runtime, url, ['--json', 'ls', '--state', 'dead', queue])) as {
    jobs: Array<{ id: string; lastError: { message: string } }>;
  };
  if (ls.jobs[0]?.id !== 'job-7' || !ls.jobs[0].lastError.message.includes('doomed')) {
    throw new Error(`ls: ${JSON.stringify(ls)}`);
  }
  return 'stats and ls --state dead read the round trip back';
}

async function dashboard(runtime: Runtime, url: string): Promise<string> {
  const base = '/admin/queues';
  const c = start(runtime, `${FIXTURES}serve-dashboard.ts`, {
    REDIS_URL: url,
    DASHBOARD_TOKEN: TOKEN,
    BASE_PATH: base,
  });
  try {
    const ready = await line(c, /^ready (\{.*\})$/m, 30_000, 'ready line');
    const { port } = JSON.parse(ready[1]!) as { port: number };
    const at = `http://127.0.0.1:${port}${base}`;
    const bearer = { authorization: `Bearer ${TOKEN}` };
    const page = await fetch(`${at}/queues/rt-${runtime.name}`, { headers: bearer });
    const html = await page.text();
    if (page.status !== 200 || !html.includes(`src="${base}/assets/app.js"`)) {
      throw new Error(`page: ${page.status}`);
    }
    const api = await fetch(`${at}/api/queues/rt-${runtime.name}`, { headers: bearer });
    const data = (await api.json()) as { counts?: { dead: number } };
    if (api.status !== 200 || data.counts?.dead !== 1)
      throw new Error(`api: ${api.status} ${JSON.stringify(data)}`);
    const post = await fetch(`${at}/api/queues/rt-${runtime.name}/dead/retry-all`, { method: 'POST' });
    if (post.status !== 401) throw new Error(`unauthenticated POST answered ${post.status}`);
    const q = new Queue(`rt-${runtime.name}`, { connection: url });
    const dead = (await q.counts()).dead;
    await q.close();
    if (dead !== 1) throw new Error('the refused POST changed the dead set');
    c.child.kill('SIGTERM');
    const code = await exitOf(c, 10_000);
    if (code !== 0) throw new Error(`exited ${code} on SIGTERM`);
    const server = runtime.name === 'bun' ? 'Bun.serve' : 'Deno.serve';
    return `${server} at ${base}: page 200, API read, unauthenticated POST 401`;
  } finally {
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  }
}

async function cliWorker(runtime: Runtime, url: string): Promise<string> {
  const queue = `cli-${runtime.name}`;
  const w = start(runtime, CLI, { QUEUE: queue }, [
    '--redis',
    url,
    'worker',
    `${FIXTURES}handlers.mjs`,
    '--dashboard-port',
    '0',
  ]);
  try {
    const ready = await line(w, /^worker ready: .* dashboard (http:\/\/\S+)$/m, 30_000, 'worker ready line');
    const dashboardUrl = ready[1]!;
    cli(runtime, url, ['add', queue, '{"n":1}', '--id', 'cli-1', '--attempts', '3']);
    await line(w, new RegExp(`^✓ ${queue} cli-1 +attempt 2`, 'm'), 20_000, 'completion on attempt 2');
    const api = await fetch(`${dashboardUrl}api/queues/${queue}`);
    const data = (await api.json()) as { counts?: Record<string, number> };
    if (api.status !== 200 || data.counts?.['scheduled'] !== 0)
      throw new Error(`api: ${JSON.stringify(data)}`);
    // Workers flush their completed count to Redis once a second (docs/ARCHITECTURE.md §7): read /metrics
    // until the flush has landed, for up to 5 s.
    const expected = `delayq_completed_total{queue="${queue}"} 1`;
    let metrics = '';
    for (const until = Date.now() + 5_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
      metrics = await (await fetch(`${dashboardUrl}metrics`)).text();
      if (metrics.includes(expected)) break;
    }
    if (!metrics.includes(expected)) throw new Error(`metrics (after 5 s):\n${metrics}`);
    w.child.kill('SIGTERM');
    const code = await exitOf(w, 15_000);
    if (code !== 0) throw new Error(`exited ${code} on SIGTERM`);
    return 'delayq worker ran a retried job; its dashboard (node:http) and /metrics answered; SIGTERM exit 0';
  } finally {
    if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
  }
}

let passed = 0;
let failed = 0;
async function check(label: string, run: () => string | Promise<string>): Promise<void> {
  const started = Date.now();
  try {
    const detail = await run();
    passed++;
    console.log(`ok   ${label} (${Date.now() - started} ms): ${detail}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${label}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

for (const runtime of runtimes) {
  const version = execFileSync(`${BIN}${runtime.name}`, ['--version'], { encoding: 'utf8' }).split('\n')[0];
  console.log(`runtimes: ${version?.startsWith(runtime.name) ? version : `${runtime.name} ${version}`}`);
}
let redis: RedisServer | undefined;
try {
  redis = await startRedis();
  const url = redis.url;
  for (const runtime of runtimes) {
    await check(`${runtime.name} roundtrip`, () => roundtrip(runtime, url));
    await check(`${runtime.name} crash`, () => crash(runtime, url));
    await check(`${runtime.name} cli`, () => cliReads(runtime, url));
    await check(`${runtime.name} dashboard`, () => dashboard(runtime, url));
    await check(`${runtime.name} cli worker`, () => cliWorker(runtime, url));
  }
} finally {
  await redis?.stop();
}
console.log(`runtimes: ${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
