/**
 * Where W8's lateness comes from, in three parts, at one arrival rate: (1) the add path, the
 * due time Redis stored minus the one the caller asked for (Date.now() at the add call + delay),
 * which is the time from the send to the script's TIME (queueing behind other commands and
 * reading the request; the time before the send is already taken off); (2) the claim, claim time
 * minus due time by the Redis clock; (3) the start, the handler's Date.now() minus the claim time.
 * Same arrivals as W8: rate/10 jobs every 100 ms, each due 1.0–1.1 s after its add call, one
 * worker process at concurrency 50, on a private redis-server.
 *
 * `--w3`: W3's shape instead (bench/workloads/w2-w3-lateness.ts): one addBulk of `--jobs` (500)
 * jobs from a fresh Queue (on a server that has loaded the scripts), due evenly over `--span` ms
 * (10,000) after a 1 s lead, one worker at concurrency 10. `--bounds=<jobs>[x<bytes>]` sets the bounds of one add call
 * (src/queue/add-calls.ts) for the producer here.
 *
 * Run: node --import tsx bench/lateness-breakdown.ts [--rate=6000] [--seconds=10]
 *      node --import tsx bench/lateness-breakdown.ts --w3 [--jobs=500] [--span=10000]
 */
import { fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Queue } from '../src/index.js';
import { setAddCallBounds } from '../src/queue/add-calls.js';
import { boundsFlag, boundsLabel } from './lib/add-bounds.js';
import { countFlag } from './lib/flags.js';
import { startBenchRedis } from './lib/redis.js';
import { runMain } from './lib/main.js';

const W3 = process.argv.includes('--w3');
const RATE = countFlag('rate', 6_000);
const SECONDS = countFlag('seconds', 10);
const W3_JOBS = countFlag('jobs', 500);
const W3_SPAN_MS = countFlag('span', 10_000);
const TICK_MS = 100;
const LEAD_MS = 1_000;
const SPREAD_MS = 100;

function summary(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return `min ${sorted[0]} p50 ${at(0.5)} p90 ${at(0.9)} p99 ${at(0.99)} max ${sorted[sorted.length - 1]} ms`;
}

/**
 * W3's arrivals: one addBulk of W3_JOBS jobs due evenly over W3_SPAN_MS after a 1 s lead. Returns
 * how long it took, and each job's place in it by its asked due time.
 */
async function addW3(queue: Queue<{ due: number }>): Promise<{ ms: number; indexOf: Map<number, number> }> {
  const calledAt = Date.now();
  const before = performance.now();
  const indexOf = new Map<number, number>();
  await queue.addBulk(
    Array.from({ length: W3_JOBS }, (_, i) => {
      const delay = LEAD_MS + Math.floor((i * W3_SPAN_MS) / W3_JOBS);
      indexOf.set(calledAt + delay, i);
      return { payload: { due: calledAt + delay }, opts: { delay } };
    }),
  );
  return { ms: performance.now() - before, indexOf };
}

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  const bounds = boundsFlag()[0]!;
  setAddCallBounds(bounds);
  const perTick = Math.max(1, Math.round((RATE * TICK_MS) / 1000));
  const ticks = Math.round((SECONDS * 1000) / TICK_MS);
  const queue = new Queue<{ due: number }>('breakdown', { connection: redis.url });
  const child = fork(
    fileURLToPath(new URL('./processes/lateness-breakdown-worker.ts', import.meta.url)),
    [redis.url, 'breakdown', String(W3 ? W3_JOBS : perTick * ticks), String(W3 ? 10 : 50)],
    { execArgv: ['--import', 'tsx'] },
  );
  try {
    const messages = new Map<string, (m: { rows?: number[] }) => void>();
    child.on('message', (m: { ready?: boolean; rows?: number[] }) =>
      messages.get(m.ready ? 'ready' : 'rows')?.(m),
    );
    const ready = new Promise((resolve) => messages.set('ready', resolve));
    const done = new Promise<{ rows?: number[] }>((resolve) => messages.set('rows', resolve));
    await ready;
    let maxAddMs = 0;
    let w3Index: Map<number, number> | undefined;
    if (W3) {
      // The server loads delayq's function library once (the bench's W3 runs on one server): done
      // by another producer here, so the measured Queue is as fresh as W3's, no bound of the
      // server clock learnt, but the first call does not wait for the library to load.
      const warm = new Queue<number>('breakdown-warm', { connection: redis.url });
      await warm.add(0);
      await warm.close();
      console.log(
        `lateness breakdown, W3: ${W3_JOBS} jobs over ${W3_SPAN_MS} ms in one addBulk [${boundsLabel(bounds)}]; load average ${loadavg()[0]!.toFixed(2)}`,
      );
      const w3 = await addW3(queue);
      maxAddMs = w3.ms;
      w3Index = w3.indexOf;
    } else {
      // The producer's first add connects and loads the script: before the arrivals start.
      await queue.addBulk([{ payload: { due: 0 }, opts: { delay: 60_000 } }]);
      console.log(
        `lateness breakdown: ${RATE} jobs/s for ${SECONDS} s [${boundsLabel(bounds)}]; load average ${loadavg()[0]!.toFixed(2)}`,
      );
    }
    const t0 = performance.now();
    for (let k = 0; k < (W3 ? 0 : ticks); k++) {
      const wait = t0 + k * TICK_MS - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const calledAt = Date.now();
      const before = performance.now();
      await queue.addBulk(
        Array.from({ length: perTick }, (_, j) => {
          const delay = LEAD_MS + Math.floor((j * SPREAD_MS) / perTick);
          return { payload: { due: calledAt + delay }, opts: { delay } };
        }),
      );
      maxAddMs = Math.max(maxAddMs, performance.now() - before);
    }
    const rows = (await done).rows ?? [];
    const total: number[] = [];
    const addPath: number[] = [];
    const claimPart: number[] = [];
    const startPart: number[] = [];
    // W3: the add path of each add call's jobs (its place in the addBulk / the job bound).
    const addPathByCall: number[][] = [];
    for (let i = 0; i < rows.length; i += 4) {
      const [asked, runAt, claimedAt, started] = [rows[i]!, rows[i + 1]!, rows[i + 2]!, rows[i + 3]!];
      total.push(started - asked);
      addPath.push(runAt - asked);
      const at = w3Index?.get(asked);
      if (at !== undefined) (addPathByCall[Math.floor(at / bounds.jobs)] ??= []).push(runAt - asked);
      claimPart.push(claimedAt - runAt);
      startPart.push(started - claimedAt);
    }
    console.log(`from the add call (${W3 ? 'W3' : 'W8'}'s figure, at handler start): ${summary(total)}`);
    console.log(`  1. add path, stored due - asked due: ${summary(addPath)}`);
    addPathByCall.forEach((late, k) => console.log(`     jobs of add call ${k + 1}: ${summary(late)}`));
    console.log(`  2. claim, claim time - due (Redis clock): ${summary(claimPart)}`);
    console.log(`  3. start, handler - claim time: ${summary(startPart)}`);
    console.log(
      `longest add call ${maxAddMs.toFixed(1)} ms; load average at the end ${loadavg()[0]!.toFixed(2)}`,
    );
  } finally {
    child.send('close');
    await new Promise((resolve) => child.once('exit', resolve));
    await queue.close();
    await redis.stop();
  }
}

runMain(main);
