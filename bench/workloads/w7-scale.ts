/**
 * W7 scale: with N jobs waiting far in the future, (a) how fast a worker at concurrency 50 runs a
 * batch of immediate jobs, and (b) how long one immediate job takes from add to handler start on
 * an otherwise idle worker ("claim latency"). The per-job cost should not grow with N: the Redis
 * CPU and commands per processed job in (a), from INFO deltas on a redis-server of the run's own,
 * are the claim cost itself, free of the client's and the machine's timing.
 */
import type { SystemName } from '../adapters/adapter.js';
import { createAdapter } from '../adapters/index.js';
import { ChildWorker, startCountingWorker } from '../lib/child.js';
import { freshQueue, sleep, type Context } from '../lib/context.js';
import { callsBetween, commandCalls, cpuMicros, startBenchRedis, usedMemory } from '../lib/redis.js';
import { median } from '../lib/stats.js';
import { addInBulk } from './w1-throughput.js';

const FAR_MS = 24 * 3_600_000;

async function once(ctx: Context, system: SystemName, waiting: number): Promise<void> {
  const redis = await startBenchRedis();
  const { control, url } = redis;
  const { jobs, singles, concurrency } = ctx.profile.w7;
  const queue = freshQueue('w7');
  const adapter = createAdapter(system, { url, queue });
  try {
    const memory0 = await usedMemory(control);
    const fillMs = await addInBulk(
      ctx,
      (c) => adapter.addBulk(c),
      waiting,
      (i, now) => ({
        payload: { i: -1 - i, due: now + FAR_MS },
        delayMs: FAR_MS,
      }),
    );
    // The bench process's own heap once the backlog is in: it must not grow with N (10⁷ is filled too).
    const heapMb = process.memoryUsage().heapUsed / 2 ** 20;
    const label = waiting.toLocaleString('en-US');
    // Filling the backlog is what W7 costs at 10⁶: recorded, so the bench's runtime is explained.
    ctx.rec.add('W7', `backlog fill, ${label} waiting`, 's', 'lower', system, fillMs / 1000);
    // What the backlog costs in memory, per job: at 10⁷ this decides whether a system fits at all.
    const bytesPerJob = ((await usedMemory(control)) - memory0) / waiting;
    ctx.rec.add('W7', `bytes per waiting job, ${label} waiting`, 'B', 'lower', system, bytesPerJob);

    // (b) first, while the worker is idle.
    const single = await ChildWorker.start({
      system,
      url,
      queue,
      concurrency: 1,
      settings: 'default',
      mode: 'each',
    });
    const latencies: number[] = [];
    try {
      for (let i = 0; i < singles; i++) {
        await adapter.add({ payload: { i, due: Date.now() }, delayMs: 0 });
        latencies.push((await single.next('started', 30_000)).latenessMs);
        await sleep(100);
      }
    } finally {
      await single.close();
    }
    ctx.rec.add(
      'W7',
      `add-to-start latency, ${label} waiting (median)`,
      'ms',
      'lower',
      system,
      median(latencies),
    );

    // (a) throughput with the same backlog.
    await addInBulk(
      ctx,
      (c) => adapter.addBulk(c),
      jobs,
      (i, now) => ({ payload: { i, due: now }, delayMs: 0 }),
    );
    const cpu0 = await cpuMicros(control);
    const calls0 = await commandCalls(control);
    const child = await startCountingWorker({ system, url, queue, concurrency, expect: jobs });
    try {
      const done = await child.next('done', 600_000);
      const cpuPerJob = ((await cpuMicros(control)) - cpu0) / jobs;
      const callsPerJob = callsBetween(calls0, await commandCalls(control)) / jobs;
      const rate = (done.completed / done.elapsedMs) * 1000;
      ctx.rec.add('W7', `processing c${concurrency}, ${label} waiting`, 'jobs/s', 'higher', system, rate);
      ctx.rec.add('W7', `Redis CPU per processed job, ${label} waiting`, 'µs', 'lower', system, cpuPerJob);
      ctx.rec.add(
        'W7',
        `Redis commands per processed job, ${label} waiting`,
        'cmds',
        'lower',
        system,
        callsPerJob,
      );
      ctx.log(
        `  W7 ${system} ${label} waiting: filled in ${(fillMs / 1000).toFixed(1)} s ` +
          `(bench heap ${heapMb.toFixed(0)} MB), ` +
          `${bytesPerJob.toFixed(0)} B/job, ${Math.round(rate)}/s, add-to-start ${median(latencies)} ms, ` +
          `Redis ${cpuPerJob.toFixed(1)} µs and ${callsPerJob.toFixed(1)} commands per processed job`,
      );
    } finally {
      await child.close();
    }
  } finally {
    await adapter.close();
    await redis.stop();
  }
}

/**
 * The backlog sizes for `--w7-max=N`: the profile's sizes up to N, then every power of ten above
 * the largest of them up to N, then N itself (so --w7-max=1e7 adds 10⁷ to 10³, 10⁵, 10⁶).
 */
export function w7Sizes(defaults: readonly number[], max: number): number[] {
  const top = Math.floor(max);
  const sizes = defaults.filter((n) => n <= top);
  let next = 10 ** Math.ceil(Math.log10(Math.max(1, ...sizes) + 1));
  for (; next <= top; next *= 10) sizes.push(next);
  if (!sizes.includes(top)) sizes.push(top);
  return sizes;
}

/** Run W7 for every backlog size, system and repetition. */
export async function runW7(ctx: Context): Promise<void> {
  for (let rep = 1; rep <= ctx.profile.w7.reps; rep++) {
    for (const waiting of ctx.profile.w7.waiting) {
      for (const system of ctx.systems) await once(ctx, system, waiting);
    }
  }
}
