/**
 * What claim.lua costs Redis, without a worker's timing in the way: one client claims exactly
 * `--limit` due jobs per call with the previous batch's acks riding each call (as a busy worker
 * does), over `--jobs` jobs, on a private redis-server; then the fixed cost of a call that finds
 * nothing to do, against a trivial EVAL. Redis CPU from INFO cpu, script time from INFO
 * commandstats. It isolates the script from W1, whose batch sizes follow the worker's speed.
 *
 * Run: node --import tsx bench/claim-cost.ts [--jobs=100000] [--limit=50] [--runs=3]
 */
import { loadavg } from 'node:os';
import { Queue } from '../src/index.js';
import { claim, type AckItem, type ClaimInput } from '../src/operations/claim.js';
import { ZSET_LAYOUT } from '../src/operations/wheel.js';
import { queueKeys } from '../src/redis/keys.js';
import { countFlag } from './lib/flags.js';
import { cpuMicros, reset, startBenchRedis, type BenchRedis } from './lib/redis.js';
import { runMain } from './lib/main.js';

const JOBS = countFlag('jobs', 100_000);
const LIMIT = countFlag('limit', 50);
const RUNS = countFlag('runs', 3);
const EMPTY_CALLS = 5_000;
const QUEUE = 'claim-cost';

const SETTINGS: Omit<ClaimInput, 'limit' | 'acks'> = {
  strategy: 'zpopmin',
  leaseMs: 30_000,
  holder: 1,
  deadMaxCount: 1_000,
  deadMaxAgeMs: 86_400_000,
  rate: { max: 0, perMs: 0 },
  eventsCap: -10_000,
  zmscore: true,
  layout: ZSET_LAYOUT,
};

/** EVALSHA's calls and total µs so far (INFO commandstats). */
async function evalshaStats(redis: BenchRedis): Promise<{ calls: number; usec: number }> {
  const match = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await redis.control.info('commandstats'));
  return { calls: Number(match?.[1] ?? 0), usec: Number(match?.[2] ?? 0) };
}

/** Claim JOBS due jobs LIMIT at a time; Redis CPU and script µs per job. */
async function busyRun(redis: BenchRedis): Promise<{ cpu: number; script: number; calls: number }> {
  await reset(redis.control);
  const queue = new Queue<{ i: number; pad: string }>(QUEUE, { connection: redis.url });
  const pad = 'x'.repeat(60);
  for (let i = 0; i < JOBS; i += 1_000) {
    const n = Math.min(1_000, JOBS - i);
    await queue.addBulk(Array.from({ length: n }, (_, k) => ({ payload: { i: i + k, pad } })));
  }
  await queue.close();
  const keys = queueKeys(QUEUE);
  await redis.control.config('RESETSTAT');
  const before = await cpuMicros(redis.control);
  let acks: AckItem[] = [];
  let claimed = 0;
  while (claimed < JOBS) {
    const out = await claim(redis.control, keys, { ...SETTINGS, limit: LIMIT, acks });
    if (out.jobs.length === 0) throw new Error(`claim-cost: only ${claimed} of ${JOBS} jobs were due`);
    acks = out.jobs.map((job) => ({
      member: job.member,
      knownDeadline: job.deadline,
      hadError: false,
      progressed: false,
    }));
    claimed += out.jobs.length;
  }
  await claim(redis.control, keys, { ...SETTINGS, limit: 0, acks });
  const cpu = (await cpuMicros(redis.control)) - before;
  const { calls, usec } = await evalshaStats(redis);
  return { cpu: cpu / JOBS, script: usec / JOBS, calls };
}

/** µs per call of a claim that finds nothing, and of a trivial EVAL. */
async function fixedCost(redis: BenchRedis): Promise<{ empty: number; trivial: number }> {
  await reset(redis.control);
  const keys = queueKeys(QUEUE);
  for (let i = 0; i < EMPTY_CALLS; i++) await claim(redis.control, keys, { ...SETTINGS, limit: 1, acks: [] });
  const empty = await evalshaStats(redis);
  await redis.control.config('RESETSTAT');
  for (let i = 0; i < EMPTY_CALLS; i++) await redis.control.eval('return 1', 0);
  const match = /cmdstat_eval:calls=(\d+),usec=(\d+)/.exec(await redis.control.info('commandstats'));
  return { empty: empty.usec / empty.calls, trivial: Number(match?.[2]) / Number(match?.[1]) };
}

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  try {
    console.log(
      `claim.lua cost: ${JOBS} jobs, ${LIMIT} per call, ${RUNS} run(s); load average ${loadavg()[0]!.toFixed(2)}`,
    );
    for (let run = 1; run <= RUNS; run++) {
      const r = await busyRun(redis);
      console.log(
        `run ${run}: Redis CPU ${r.cpu.toFixed(2)} µs per job; EVALSHA ${r.script.toFixed(2)} µs per job over ${r.calls} calls`,
      );
    }
    const f = await fixedCost(redis);
    console.log(
      `a claim finding nothing: ${f.empty.toFixed(1)} µs per call (a trivial EVAL: ${f.trivial.toFixed(1)} µs)`,
    );
  } finally {
    await redis.stop();
  }
}

runMain(main);
