/**
 * W2 and W3: delayed jobs, and how late they start.
 *
 * Lateness for delayq is job.claimedAt - job.runAt, both by the Redis clock. BullMQ and bee-queue
 * record no claim time, so theirs is the handler's Date.now() minus the intended due time
 * (Date.now() at add + delay). The second method is also recorded for delayq, so the three can be
 * compared on equal terms.
 */
import type { SystemName } from '../adapters/adapter.js';
import { createAdapter } from '../adapters/index.js';
import { ChildWorker } from '../lib/child.js';
import { chunks, freshQueue, sleep, type Context } from '../lib/context.js';
import { reset } from '../lib/redis.js';
import { latenessSummary, percentiles } from '../lib/stats.js';

/** Record p50/p99/max of a lateness sample under `prefix`. */
function recordLateness(
  ctx: Context,
  w: string,
  prefix: string,
  system: SystemName,
  sample: readonly number[],
): void {
  const s = latenessSummary(sample);
  ctx.rec.add(w, `${prefix} p50`, 'ms', 'lower', system, s.p50);
  ctx.rec.add(w, `${prefix} p99`, 'ms', 'lower', system, s.p99);
  ctx.rec.add(w, `${prefix} max`, 'ms', 'lower', system, s.max);
}

/** The headline lateness: Redis clock for delayq, handler start for the others (see module comment). */
function headline(system: SystemName, handler: number[], server: number[]): number[] {
  return system === 'delayq' && server.length > 0 ? server : handler;
}

/** `count` jobs due uniformly over `spanMs`, starting after a lead long enough to add them all first. */
async function spread(
  ctx: Context,
  w: string,
  system: SystemName,
  opts: { count: number; spanMs: number; concurrency: number },
): Promise<void> {
  const { control, url } = ctx.redis;
  await reset(control);
  const queue = freshQueue(w.toLowerCase());
  const adapter = createAdapter(system, { url, queue });
  const child = await ChildWorker.start({
    system,
    url,
    queue,
    concurrency: opts.concurrency,
    settings: 'default',
    mode: 'count',
    expect: opts.count,
  });
  try {
    // Adding runs at >= 20k jobs/s for every system here (warm); the lead keeps all adds before the first due time.
    const leadMs = Math.max(1_000, Math.round(opts.count / 15));
    const base = Date.now() + leadMs;
    let addedLate = 0;
    for (const range of chunks(
      Array.from({ length: opts.count }, (_, i) => i),
      ctx.profile.bulkSize,
    )) {
      const now = Date.now();
      await adapter.addBulk(
        range.map((i) => {
          const due = base + Math.floor((i * opts.spanMs) / opts.count);
          if (due - now < 1) addedLate++;
          return { payload: { i, due: now + Math.max(1, due - now) }, delayMs: Math.max(1, due - now) };
        }),
      );
    }
    const done = await child.next('done', leadMs + opts.spanMs + 300_000);
    const rate = (done.completed / done.elapsedMs) * 1000;
    ctx.rec.add(w, 'processing', 'jobs/s', 'higher', system, rate);
    const main = headline(system, done.latenessMs, done.serverLatenessMs);
    recordLateness(ctx, w, 'lateness', system, main);
    recordLateness(ctx, w, 'lateness at handler start', system, done.latenessMs);
    ctx.rec.distribution(`${w} lateness`, system, percentiles(main));
    if (addedLate > 0) ctx.rec.add(w, 'jobs added after their due time', 'jobs', 'lower', system, addedLate);
    const s = latenessSummary(main);
    ctx.log(`  ${w} ${system}: ${Math.round(rate)}/s, lateness p50 ${s.p50} p99 ${s.p99} max ${s.max} ms`);
  } finally {
    await child.close();
    await adapter.close();
  }
}

/** One job delayed `delayMs` on an idle queue, `count` times in a row, one worker at concurrency 1. */
async function singles(ctx: Context, system: SystemName, count: number, delayMs: number): Promise<void> {
  const { control, url } = ctx.redis;
  await reset(control);
  const queue = freshQueue('w3s');
  const adapter = createAdapter(system, { url, queue });
  const child = await ChildWorker.start({
    system,
    url,
    queue,
    concurrency: 1,
    settings: 'default',
    mode: 'each',
  });
  const handler: number[] = [];
  const server: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const now = Date.now();
      await adapter.add({ payload: { i, due: now + delayMs }, delayMs });
      const started = await child.next('started', delayMs + 30_000);
      handler.push(started.latenessMs);
      if (started.serverLatenessMs !== null) server.push(started.serverLatenessMs);
      // Let the ack land so the next job finds the queue idle.
      await sleep(100);
    }
    const main = headline(system, handler, server);
    recordLateness(ctx, 'W3', 'single job lateness', system, main);
    recordLateness(ctx, 'W3', 'single job lateness at handler start', system, handler);
    const s = latenessSummary(main);
    ctx.log(`  W3 single ${system}: p50 ${s.p50} p99 ${s.p99} max ${s.max} ms`);
  } finally {
    await child.close();
    await adapter.close();
  }
}

/** W2: many jobs due over a few seconds at concurrency 50. */
export async function runW2(ctx: Context): Promise<void> {
  const { w2, reps } = ctx.profile;
  for (let rep = 1; rep <= reps; rep++) {
    for (const system of ctx.systems)
      await spread(ctx, 'W2', system, { count: w2.jobs, spanMs: w2.spanMs, concurrency: w2.concurrency });
  }
}

/** W3: precision, a sparse stream of jobs and single jobs on an idle queue. */
export async function runW3(ctx: Context): Promise<void> {
  const { w3, reps } = ctx.profile;
  for (let rep = 1; rep <= reps; rep++) {
    for (const system of ctx.systems)
      await spread(ctx, 'W3', system, { count: w3.jobs, spanMs: w3.spanMs, concurrency: w3.concurrency });
  }
  // The singles are their own repetitions (w3.singles samples), so they run once per system.
  for (const system of ctx.systems) await singles(ctx, system, w3.singles, w3.singleDelayMs);
}
