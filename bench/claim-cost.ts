/**
 * What claim.lua costs Redis, without a worker's timing in the way: one client claims exactly
 * `--limit` due jobs per call with the previous batch's acks riding each call (as a busy worker
 * does), over `--jobs` jobs, on a private redis-server; then the fixed cost of a call that finds
 * nothing to do, against a trivial EVAL. Redis CPU from INFO cpu, script time from INFO
 * commandstats. It isolates the script from W1, whose batch sizes follow the worker's speed.
 *
 * The claim runs as delayq sends it: FCALL of the function library where the server has
 * functions, or EVALSHA with --eval (as before the library, and on servers without functions).
 *
 * Run: node --import tsx bench/claim-cost.ts [--jobs=100000] [--limit=50] [--runs=3] [--eval]
 */
import { loadavg } from 'node:os';
import { Queue } from '../src/index.js';
import { claim } from '../src/operations/claim.js';
import { queueKeys } from '../src/redis/keys.js';
import { setScriptTransport } from '../src/redis/scripts.js';
import { busyClaimSettings, claimBusily } from './lib/busy-claims.js';
import { countFlag } from './lib/flags.js';
import { cpuMicros, reset, startBenchRedis, type BenchRedis } from './lib/redis.js';
import { runMain } from './lib/main.js';

const JOBS = countFlag('jobs', 100_000);
const LIMIT = countFlag('limit', 50);
const RUNS = countFlag('runs', 3);
const EMPTY_CALLS = 5_000;
const QUEUE = 'claim-cost';

const SETTINGS = busyClaimSettings(30_000);

const EVAL_ONLY = process.argv.includes('--eval');
const COMMAND = EVAL_ONLY ? 'evalsha' : 'fcall';

/** A script command's calls and total µs so far (INFO commandstats). */
function commandStats(stats: string, command: string): { calls: number; usec: number } {
  const match = new RegExp(`cmdstat_${command}:calls=(\\d+),usec=(\\d+)`).exec(stats);
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
  await claimBusily(redis.control, keys, SETTINGS, JOBS, LIMIT);
  const cpu = (await cpuMicros(redis.control)) - before;
  const { calls, usec } = commandStats(await redis.control.info('commandstats'), COMMAND);
  return { cpu: cpu / JOBS, script: usec / JOBS, calls };
}

/**
 * µs per call of a claim that finds nothing, sent as EVALSHA and (unless --eval) as FCALL in
 * alternating blocks, so a neighbour's load drifting during the run weighs on both alike; and of
 * a trivial EVAL.
 */
async function fixedCost(redis: BenchRedis): Promise<{
  evalsha: number;
  fcall: number;
  evalshaCpu: number;
  fcallCpu: number;
  trivial: number;
}> {
  await reset(redis.control);
  const keys = queueKeys(QUEUE);
  const block = 100;
  // Redis CPU (INFO cpu) per block as well: commandstats' µs are wall time inside Redis, which a
  // busy neighbour stretches when it takes the core away mid-call.
  const cpu = { eval: 0, auto: 0 };
  for (let i = 0; i < EMPTY_CALLS; i += block) {
    for (const t of EVAL_ONLY ? (['eval'] as const) : (['eval', 'auto'] as const)) {
      setScriptTransport(t);
      const before = await cpuMicros(redis.control);
      for (let k = 0; k < block; k++) await claim(redis.control, keys, { ...SETTINGS, limit: 1, acks: [] });
      cpu[t] += (await cpuMicros(redis.control)) - before;
    }
  }
  setScriptTransport(EVAL_ONLY ? 'eval' : 'auto');
  const stats = await redis.control.info('commandstats');
  const evalsha = commandStats(stats, 'evalsha');
  const fcall = commandStats(stats, 'fcall');
  await redis.control.config('RESETSTAT');
  for (let i = 0; i < EMPTY_CALLS; i++) await redis.control.eval('return 1', 0);
  const trivial = commandStats(await redis.control.info('commandstats'), 'eval');
  return {
    evalsha: evalsha.usec / evalsha.calls,
    fcall: fcall.usec / fcall.calls,
    evalshaCpu: cpu.eval / EMPTY_CALLS,
    fcallCpu: cpu.auto / EMPTY_CALLS,
    trivial: trivial.usec / trivial.calls,
  };
}

async function main(): Promise<void> {
  if (EVAL_ONLY) setScriptTransport('eval');
  const redis = await startBenchRedis();
  try {
    console.log(
      `claim.lua cost (${COMMAND.toUpperCase()}): ${JOBS} jobs, ${LIMIT} per call, ${RUNS} run(s); load average ${loadavg()[0]!.toFixed(2)}`,
    );
    for (let run = 1; run <= RUNS; run++) {
      const r = await busyRun(redis);
      console.log(
        `run ${run}: Redis CPU ${r.cpu.toFixed(2)} µs per job; ${COMMAND.toUpperCase()} ${r.script.toFixed(2)} µs per job over ${r.calls} calls`,
      );
    }
    const f = await fixedCost(redis);
    const fcall = EVAL_ONLY
      ? ''
      : `; as FCALL ${f.fcall.toFixed(1)} µs (Redis CPU ${f.fcallCpu.toFixed(1)} µs)`;
    console.log(
      `a claim finding nothing: as EVALSHA ${f.evalsha.toFixed(1)} µs per call (Redis CPU ${f.evalshaCpu.toFixed(1)} µs)${fcall}; a trivial EVAL: ${f.trivial.toFixed(1)} µs`,
    );
  } finally {
    await redis.stop();
  }
}

runMain(main);
