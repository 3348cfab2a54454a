/**
 * W1 immediate throughput: N tiny jobs added in bulk (timed), then one worker process at
 * concurrency c runs them all (timed in that process, first handler start to last completion).
 * Redis CPU, commands and script calls per job come from INFO deltas around each phase, on a
 * redis-server of the run's own: nothing another system left behind (a connection still closing,
 * a timer of a worker that took its time to exit) can add to the counts.
 */
import { performance } from 'node:perf_hooks';
import type { NewJob, SystemName } from '../adapters/adapter.js';
import { createAdapter } from '../adapters/index.js';
import { startCountingWorker } from '../lib/child.js';
import { freshQueue, type Context } from '../lib/context.js';
import { callsBetween, commandCalls, cpuMicros, scriptCallsBetween, startBenchRedis } from '../lib/redis.js';

/** Add `jobs` through the adapter in bulk chunks; returns the time it took, ms. */
export async function addInBulk(
  ctx: Context,
  add: (chunk: NewJob[]) => Promise<void>,
  count: number,
  make: (i: number, now: number) => NewJob,
): Promise<number> {
  const start = performance.now();
  // Chunk by chunk, never the whole range at once: W7 may add 10⁷.
  for (let first = 0; first < count; first += ctx.profile.bulkSize) {
    const now = Date.now();
    const size = Math.min(ctx.profile.bulkSize, count - first);
    await add(Array.from({ length: size }, (_, k) => make(first + k, now)));
  }
  return performance.now() - start;
}

async function once(
  ctx: Context,
  system: SystemName,
  concurrency: number,
  count: number,
  recordAdd: boolean,
): Promise<void> {
  const redis = await startBenchRedis();
  const { control, url } = redis;
  const queue = freshQueue('w1');
  const adapter = createAdapter(system, { url, queue });
  try {
    // The first add on a new producer connects and loads scripts (tens of ms): done before timing,
    // for every system alike, so bulk add is the steady rate. The job runs first and is not timed.
    await adapter.add({ payload: { i: -1, due: Date.now(), warmup: true }, delayMs: 0 });
    const cpu0 = await cpuMicros(control);
    const calls0 = await commandCalls(control);
    const addMs = await addInBulk(
      ctx,
      (c) => adapter.addBulk(c),
      count,
      (i, now) => ({
        payload: { i, due: now },
        delayMs: 0,
      }),
    );
    const cpu1 = await cpuMicros(control);
    const calls1 = await commandCalls(control);
    const child = await startCountingWorker({ system, url, queue, concurrency, expect: count + 1 });
    try {
      const done = await child.next('done', 600_000);
      const cpu2 = await cpuMicros(control);
      const calls2 = await commandCalls(control);
      // The worker ran the warm-up job in this window too: Redis's work per processed job is over
      // count + 1 jobs (the rate stays over the timed count: the warm-up job is not timed).
      const processed = count + 1;
      const w = 'W1';
      const tag = `c${concurrency}`;
      if (recordAdd) {
        ctx.rec.add(w, 'bulk add', 'jobs/s', 'higher', system, (count / addMs) * 1000);
        ctx.rec.add(w, 'Redis CPU per added job', 'µs', 'lower', system, (cpu1 - cpu0) / count);
        ctx.rec.add(
          w,
          'Redis commands per added job',
          'cmds',
          'lower',
          system,
          callsBetween(calls0, calls1) / count,
        );
        ctx.rec.add(
          w,
          'script calls per added job',
          'calls',
          'lower',
          system,
          scriptCallsBetween(calls0, calls1) / count,
        );
      }
      ctx.rec.add(w, `processing ${tag}`, 'jobs/s', 'higher', system, (count / done.elapsedMs) * 1000);
      ctx.rec.add(w, `Redis CPU per processed job ${tag}`, 'µs', 'lower', system, (cpu2 - cpu1) / processed);
      ctx.rec.add(
        w,
        `Redis commands per processed job ${tag}`,
        'cmds',
        'lower',
        system,
        callsBetween(calls1, calls2) / processed,
      );
      const scripts = scriptCallsBetween(calls1, calls2) / processed;
      ctx.rec.add(w, `script calls per processed job ${tag}`, 'calls', 'lower', system, scripts);
      ctx.log(
        `  W1 ${system} c${concurrency}: add ${Math.round((count / addMs) * 1000)}/s, ` +
          `process ${Math.round((count / done.elapsedMs) * 1000)}/s, ` +
          `Redis ${((cpu2 - cpu1) / processed).toFixed(1)} µs/job, ` +
          `${(callsBetween(calls1, calls2) / processed).toFixed(3)} commands/job, ${scripts.toFixed(4)} script calls/job`,
      );
    } finally {
      await child.close();
    }
  } finally {
    await adapter.close();
    await redis.stop();
  }
}

/** Run W1 for every system, concurrency and repetition. */
export async function runW1(ctx: Context): Promise<void> {
  const { w1, reps } = ctx.profile;
  const countAt = (concurrency: number) => (concurrency === 1 ? w1.jobsAtConcurrency1 : w1.jobs);
  // Bulk add is timed in the phase that adds the most jobs: the longest timing, the least noise.
  const addPhase = w1.concurrencies.reduce((a, b) => (countAt(b) > countAt(a) ? b : a));
  for (let rep = 1; rep <= reps; rep++) {
    for (const concurrency of w1.concurrencies) {
      for (const system of ctx.systems) {
        await once(ctx, system, concurrency, countAt(concurrency), concurrency === addPhase);
      }
    }
  }
}
