/**
 * The naive poller against each delayq strategy, on the same workload and the same kind of
 * redis-server: duplicates, lost jobs, lateness and throughput, side by side.
 *
 *   npm run bench:baseline            (3,000 delayed jobs over 3 s, 3 worker processes, one SIGKILLed
 *                                      mid-run and replaced; then 10,000 immediate jobs for jobs/s)
 *   npm run bench:baseline -- --quick (smaller, for CI)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Queue, type StrategyOption } from '../../src/index.js';
import { startRedis, type RedisServer } from '../../src/testing/redis-server.js';
import { naiveAdd } from './naive-poller.js';

type System = 'naive' | StrategyOption;

const quick = process.argv.includes('--quick');
const DELAYED = quick ? 600 : 3_000;
const SPAN_MS = quick ? 1_500 : 3_000;
const IMMEDIATE = quick ? 2_000 : 10_000;
const WORKERS = 3;
const CONCURRENCY = 10;
const HANDLER_MS = 20;
const LEASE_MS = 1_000;
const workerEntry = fileURLToPath(new URL('./worker.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'delayq-baseline-'));
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Entry {
  id: string;
  pid: number;
  start: number;
  due: number;
}

async function spawnWorker(
  system: System,
  url: string,
  queue: string,
  ledger: string,
): Promise<ChildProcess> {
  const child = fork(
    workerEntry,
    [
      JSON.stringify({
        system,
        url,
        queue,
        ledger,
        concurrency: CONCURRENCY,
        leaseMs: LEASE_MS,
        handlerMs: HANDLER_MS,
      }),
    ],
    { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  children.add(child);
  child.once('exit', () => children.delete(child));
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`${system} worker exited (${code}) before ready`)));
  });
  return child;
}

function readLedger(file: string): Entry[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Entry);
  } catch {
    return [];
  }
}

async function schedule(
  system: System,
  url: string,
  queue: string,
  jobs: number,
  spanMs: number,
  startInMs: number,
): Promise<string[]> {
  const ids = Array.from({ length: jobs }, (_, i) => `${queue}-${i}`);
  const base = Date.now() + startInMs;
  const dues = ids.map((id, i) => ({ id, due: base + Math.floor((i / jobs) * spanMs) }));
  if (system === 'naive') {
    const redis = new Redis(url);
    await naiveAdd(redis, queue, dues);
    await redis.quit();
  } else {
    const q = new Queue(queue, { connection: url, strategy: system });
    for (let i = 0; i < dues.length; i += 1_000) {
      await q.addBulk(
        dues.slice(i, i + 1_000).map((d) => ({ payload: null, opts: { id: d.id, runAt: d.due } })),
      );
    }
    await q.close();
  }
  return ids;
}

function pct(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

async function runDelayed(system: System, server: RedisServer): Promise<Record<string, number>> {
  const queue = `delayed-${system}`;
  const ledger = join(dir, `${queue}.jsonl`);
  writeFileSync(ledger, '');
  const workers = await Promise.all(
    Array.from({ length: WORKERS }, () => spawnWorker(system, server.url, queue, ledger)),
  );
  const ids = await schedule(system, server.url, queue, DELAYED, SPAN_MS, 500);
  await new Promise((r) => setTimeout(r, 500 + SPAN_MS / 2));
  const victim = workers[0]!;
  const killedPid = victim.pid!;
  victim.kill('SIGKILL');
  workers[0] = await spawnWorker(system, server.url, queue, ledger);
  const deadline = Date.now() + SPAN_MS + LEASE_MS + 6_000;
  while (Date.now() < deadline) {
    const seen = new Set(readLedger(ledger).map((e) => e.id));
    if (ids.every((id) => seen.has(id))) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 300)); // let stragglers (a second run) show
  await Promise.all(workers.slice(0).map((w) => stop(w)));
  const entries = readLedger(ledger);
  const runs = new Map<string, Entry[]>();
  for (const e of entries) runs.set(e.id, [...(runs.get(e.id) ?? []), e]);
  let rerunAfterKill = 0;
  let duplicates = 0;
  for (const list of runs.values()) {
    if (list.length < 2) continue;
    if (list[0]!.pid === killedPid) rerunAfterKill += list.length - 1;
    else duplicates += list.length - 1;
  }
  const lateness = [...runs.values()].map((list) => list[0]!.start - list[0]!.due).sort((a, b) => a - b);
  return {
    jobs: ids.length,
    lost: ids.filter((id) => !runs.has(id)).length,
    duplicates,
    rerunAfterKill,
    early: lateness.filter((l) => l < 0).length,
    p50: pct(lateness, 0.5),
    p99: pct(lateness, 0.99),
  };
}

async function runImmediate(system: System, server: RedisServer): Promise<number> {
  const queue = `immediate-${system}`;
  const ledger = join(dir, `${queue}.jsonl`);
  writeFileSync(ledger, '');
  const ids = await schedule(system, server.url, queue, IMMEDIATE, 0, 0);
  const workers = await Promise.all(
    Array.from({ length: WORKERS }, () => spawnWorker(system, server.url, queue, ledger)),
  );
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && new Set(readLedger(ledger).map((e) => e.id)).size < ids.length) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await Promise.all(workers.map((w) => stop(w)));
  const starts = readLedger(ledger)
    .map((e) => e.start)
    .sort((a, b) => a - b);
  return Math.round((starts.length - 1) / ((starts.at(-1)! - starts[0]!) / 1000));
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 8_000);
  await exited;
  clearTimeout(timer);
}

const systems: System[] = ['naive', 'zpopmin', 'range'];
if (process.argv.includes('--wheel')) systems.push('wheel');
const rows: string[] = [];
for (const system of systems) {
  const server = await startRedis();
  try {
    const delayed = await runDelayed(system, server);
    const rate = await runImmediate(system, server);
    rows.push(
      `| ${system} | ${delayed['jobs']} | ${delayed['lost']} | ${delayed['duplicates']} | ${delayed['rerunAfterKill']} | ${delayed['early']} | ${delayed['p50']} | ${delayed['p99']} | ${rate} |`,
    );
    console.error(`${system}: done`);
  } finally {
    await server.stop();
  }
}
console.log(
  `${DELAYED} delayed jobs over ${SPAN_MS / 1000} s, ${WORKERS} worker processes x concurrency ${CONCURRENCY}, handler ${HANDLER_MS} ms; one worker SIGKILLed mid-run and replaced (delayq leaseMs ${LEASE_MS}). jobs/s: ${IMMEDIATE} immediate jobs, same workers.\n`,
);
console.log(
  '| system | jobs | lost | duplicates (holder alive) | re-runs after the kill | early | lateness p50 ms | lateness p99 ms | jobs/s |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
