/**
 * What bulk add costs, per job, on each side: W1's bulk add alone (chunks of `--chunk` immediate
 * jobs with W1's payload, each addBulk awaited before the next, as the bench adapter does), on a
 * private redis-server, `--runs` times. Prints jobs/s, this process's CPU per job
 * (process.cpuUsage: encoding, ioredis, reply parsing) and Redis's (INFO cpu), so a change to the
 * add path shows which side it moved.
 *
 * It also prints how long Redis ran each add script call (SLOWLOG, every command logged: the
 * script's run, not the reading of its request) and Redis's CPU per call (which includes the
 * reading): while a call runs, a worker's claim waits. `--bounds` compares bounds of a call
 * (src/queue/add-calls.ts), alternated within each run so load drifts hit them alike: a list of
 * `<jobs>` or `<jobs>x<bytes>` (bytes may end in k or m), e.g. `--bounds=200x1m,100x256k`.
 * `--in-flight=N` sets the calls out at a time. `--payload=<bytes>` pads each payload to about
 * that size (W1's is ~30 bytes). `--no-call-times` leaves SLOWLOG off (logging every command costs
 * Redis a little per call, so a little more for smaller calls).
 *
 * Run: node --import tsx bench/add-cost.ts [--jobs=100000] [--chunk=1000] [--runs=3]
 *      [--payload=N] [--bounds=...] [--in-flight=N] [--no-call-times]
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Queue } from '../src/index.js';
import { ADD_CALL_BOUNDS, setAddCallBounds, type AddCallBounds } from '../src/queue/add-calls.js';
import { boundsFlag, boundsLabel, payloadFlag } from './lib/add-bounds.js';
import { countFlag } from './lib/flags.js';
import { cpuMicros, reset, startBenchRedis, type BenchRedis } from './lib/redis.js';
import { runMain } from './lib/main.js';

const JOBS = countFlag('jobs', 100_000);
const CHUNK = countFlag('chunk', 1_000);
const RUNS = countFlag('runs', 3);
const PAYLOAD = payloadFlag();
const IN_FLIGHT = countFlag('in-flight', ADD_CALL_BOUNDS.inFlight);
const CALL_TIMES = !process.argv.includes('--no-call-times');

/** The µs each add script call ran (SLOWLOG), p50, p99 and max, and how many calls. */
async function callTimes(
  redis: BenchRedis,
): Promise<{ calls: number; p50: number; p99: number; max: number }> {
  const entries = (await redis.control.call('SLOWLOG', 'GET', '-1')) as Array<
    [number, number, number, string[]]
  >;
  const times = entries
    .filter(([, , , args]) => /^(fcall|evalsha|eval)$/i.test(String(args[0])))
    .map(([, , us]) => us)
    .sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  return { calls: times.length, p50: at(0.5), p99: at(0.99), max: times[times.length - 1] ?? 0 };
}

async function once(redis: BenchRedis, run: number, bounds: AddCallBounds): Promise<void> {
  await reset(redis.control);
  setAddCallBounds(bounds);
  const pad = 'x'.repeat(PAYLOAD);
  const queue = new Queue<{ i: number; due: number; pad?: string }>(`add-cost-${run}`, {
    connection: redis.url,
    maxPayloadBytes: Math.max(1024 * 1024, 2 * PAYLOAD),
  });
  // The first add connects, probes and loads the script: not part of the steady rate.
  await queue.addBulk([{ payload: { i: -1, due: Date.now() } }]);
  await redis.control.call('SLOWLOG', 'RESET');
  const redis0 = await cpuMicros(redis.control);
  const node0 = process.cpuUsage();
  const t0 = performance.now();
  for (let first = 0; first < JOBS; first += CHUNK) {
    const now = Date.now();
    const size = Math.min(CHUNK, JOBS - first);
    await queue.addBulk(
      Array.from({ length: size }, (_, k) => ({
        payload: PAYLOAD > 0 ? { i: first + k, due: now, pad } : { i: first + k, due: now },
      })),
    );
  }
  const ms = performance.now() - t0;
  const node = process.cpuUsage(node0);
  const redisCpu = (await cpuMicros(redis.control)) - redis0;
  const calls = CALL_TIMES ? await callTimes(redis) : undefined;
  await queue.close();
  const perCall = calls
    ? `${calls.calls} calls, each run ${calls.p50}/${calls.p99}/${calls.max} µs (p50/p99/max), Redis CPU ${Math.round(redisCpu / Math.max(1, calls.calls))} µs; `
    : '';
  console.log(
    `run ${run} [${boundsLabel(bounds)}]: ${Math.round(JOBS / (ms / 1000))} jobs/s; per job: node CPU ${((node.user + node.system) / JOBS).toFixed(2)} µs ` +
      `(user ${(node.user / JOBS).toFixed(2)}), Redis CPU ${(redisCpu / JOBS).toFixed(2)} µs; ${perCall}load ${loadavg()[0]!.toFixed(2)}`,
  );
}

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  try {
    if (CALL_TIMES) {
      await redis.control.config('SET', 'slowlog-log-slower-than', '0');
      await redis.control.config('SET', 'slowlog-max-len', '1000000');
    }
    const all = boundsFlag(IN_FLIGHT);
    console.log(
      `bulk add: ${JOBS} jobs in addBulk chunks of ${CHUNK}, payload pad ${PAYLOAD} B, ${RUNS} runs of each of ${all.length} bounds`,
    );
    for (let run = 1; run <= RUNS; run++) {
      for (const bounds of all) await once(redis, run, bounds);
    }
  } finally {
    await redis.stop();
  }
}

runMain(main);
