/**
 * W8 capacity at the lateness bound (issue 14): the highest arrival rate of delayed jobs a system
 * sustains with p99 lateness at most 10 ms.
 *
 * For each rate R in turn (lowest first), on a fresh queue with a fresh worker process: the bench
 * process adds R/10 jobs every 100 ms for the step's length, each due 1.0–1.1 s after its add call
 * (spread evenly, so due times arrive at R per second). Lateness is the handler's Date.now() minus
 * (Date.now() at the add call + delay), for every system alike: a delay counts from the add call, so
 * the add call's own time is part of it. A step holds when every job ran, the p99 lateness is within
 * the bound and the producer kept up (the last add returned within a tick of the step's end, so the
 * whole rate was offered, and no tick started more than MAX_TICK_LAG_TICKS ticks behind its slot, so
 * the stream had no long gap): a step where the producer fell behind did not offer the rate, so it
 * is reported as such, never as a pass. A shorter stall of the bench process (a busy machine) only
 * shows in the step's "tick lag max". The first step that does not hold ends the
 * search for that system; the figure is the last step that held (0 when none did).
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Adapter, NewJob, SystemName } from '../adapters/adapter.js';
import { createAdapter } from '../adapters/index.js';
import { ChildWorker } from '../lib/child.js';
import { freshQueue, sleep, type Context } from '../lib/context.js';
import { reset } from '../lib/redis.js';
import { latenessSummary } from '../lib/stats.js';

/** How a step ended. */
export type W8Verdict = 'held' | 'late' | 'producer behind' | 'not drained';

/** One step of one system, kept in the results' details under "W8 steps". */
export interface W8Step {
  system: SystemName;
  /** Offered arrival rate, jobs/s. */
  rate: number;
  verdict: W8Verdict;
  /** Jobs added in the step (all of them ran unless the verdict is 'not drained'). */
  jobs: number;
  /** Lateness from the add call, ms; null when the jobs did not all run. */
  p50: number | null;
  p99: number | null;
  max: number | null;
  /** delayq only: p99 by the Redis clock (claim time minus runAt), which leaves out the add call. */
  serverP99: number | null;
  /** Jobs added per second as achieved: jobs over the time from the first tick to the last add's return. */
  addedPerSec: number;
  /** How far the latest tick started behind its slot, ms. */
  maxTickLagMs: number;
  /** The longest add call, ms. */
  maxAddMs: number;
  /** 1-minute load average when the step started. */
  load: number;
}

/**
 * How many ticks late a tick may start before the step counts as "producer behind": a one-tick
 * stall is a scheduling hiccup on a shared machine (seen at load 5: 120 ms) that the catch-up
 * absorbs; five ticks is half a second with no arrivals, then a burst: another workload.
 */
const MAX_TICK_LAG_TICKS = 5;

/** Time allowed after the last due time for the worker to finish every job before the step counts as not drained. */
const DRAIN_MS = 60_000;

/** The producer side of one step: R/10 jobs every tick, due 1.0–1.1 s after each add call. */
async function produce(
  adapter: Adapter,
  rate: number,
  w8: Context['profile']['w8'],
): Promise<{ jobs: number; elapsedMs: number; maxTickLagMs: number; maxAddMs: number }> {
  const perTick = Math.max(1, Math.round((rate * w8.tickMs) / 1000));
  const ticks = Math.max(1, Math.round(w8.stepMs / w8.tickMs));
  let maxTickLagMs = 0;
  let maxAddMs = 0;
  let i = 0;
  const t0 = performance.now();
  for (let k = 0; k < ticks; k++) {
    const slot = t0 + k * w8.tickMs;
    // Waiting for the tick's slot is the arrival schedule itself, not a guess at a condition.
    const wait = slot - performance.now();
    if (wait > 0) await sleep(wait);
    maxTickLagMs = Math.max(maxTickLagMs, performance.now() - slot);
    const calledAt = Date.now();
    const batch: NewJob[] = [];
    for (let j = 0; j < perTick; j++) {
      const delayMs = w8.leadMs + Math.floor((j * w8.spreadMs) / perTick);
      batch.push({ payload: { i: i + j, due: calledAt + delayMs }, delayMs });
    }
    const before = performance.now();
    await adapter.addBulk(batch);
    maxAddMs = Math.max(maxAddMs, performance.now() - before);
    i += perTick;
  }
  return { jobs: i, elapsedMs: performance.now() - t0, maxTickLagMs, maxAddMs };
}

/** One step: a fresh queue and worker process, R jobs/s for the step's length, then the verdict. */
async function step(ctx: Context, system: SystemName, rate: number): Promise<W8Step> {
  const { w8 } = ctx.profile;
  const { control, url } = ctx.redis;
  await reset(control);
  const queue = freshQueue('w8');
  const adapter = createAdapter(system, { url, queue });
  const perTick = Math.max(1, Math.round((rate * w8.tickMs) / 1000));
  const planned = perTick * Math.max(1, Math.round(w8.stepMs / w8.tickMs));
  const load = loadavg()[0]!;
  const child = await ChildWorker.start({
    system,
    url,
    queue,
    concurrency: w8.concurrency,
    settings: 'default',
    mode: 'count',
    // The warm-up job below counts as one.
    expect: planned + 1,
  });
  try {
    // The first add on a new producer connects and loads scripts (tens of ms): done before timing,
    // for every system alike, so the step measures the steady rate and not the start-up.
    await adapter.add({ payload: { i: -1, due: Date.now(), warmup: true }, delayMs: 0 });
    const produced = await produce(adapter, rate, w8);
    const behind =
      produced.maxTickLagMs > MAX_TICK_LAG_TICKS * w8.tickMs || produced.elapsedMs > w8.stepMs + w8.tickMs;
    const addedPerSec = (produced.jobs / Math.max(produced.elapsedMs, w8.stepMs)) * 1000;
    const base = {
      system,
      rate,
      jobs: produced.jobs,
      addedPerSec,
      maxTickLagMs: produced.maxTickLagMs,
      maxAddMs: produced.maxAddMs,
      load,
    };
    let done;
    try {
      done = await child.next('done', w8.leadMs + w8.spreadMs + DRAIN_MS);
    } catch {
      return { ...base, verdict: 'not drained', p50: null, p99: null, max: null, serverP99: null };
    }
    const s = latenessSummary(done.latenessMs);
    const server = done.serverLatenessMs.length > 0 ? latenessSummary(done.serverLatenessMs).p99 : null;
    const verdict: W8Verdict = behind ? 'producer behind' : s.p99 <= w8.p99LimitMs ? 'held' : 'late';
    return { ...base, verdict, p50: s.p50, p99: s.p99, max: s.max, serverP99: server };
  } finally {
    await child.close();
    await adapter.close();
  }
}

/** One line of the log for a step. */
function describeStep(s: W8Step): string {
  const lateness = s.p99 === null ? 'not all jobs ran' : `lateness p50 ${s.p50} p99 ${s.p99} max ${s.max} ms`;
  const server = s.serverP99 === null ? '' : ` (Redis clock p99 ${s.serverP99} ms)`;
  return (
    `  W8 ${s.system} ${s.rate.toLocaleString('en-US')}/s: ${s.verdict}; ${lateness}${server}; ` +
    `added ${Math.round(s.addedPerSec).toLocaleString('en-US')}/s, tick lag max ${s.maxTickLagMs.toFixed(0)} ms, ` +
    `add call max ${s.maxAddMs.toFixed(0)} ms; load ${s.load.toFixed(2)}`
  );
}

/** Step every system up through the profile's rates; record the last step that held. */
export async function runW8(ctx: Context): Promise<void> {
  const { w8 } = ctx.profile;
  const steps = (ctx.rec.details['W8 steps'] ??= []) as W8Step[];
  ctx.rec.details['W8 settings'] = w8;
  for (let rep = 1; rep <= w8.reps; rep++) {
    for (const system of ctx.systems) {
      let held: W8Step | undefined;
      let missed: W8Step | undefined;
      for (const rate of w8.rates) {
        const s = await step(ctx, system, rate);
        steps.push(s);
        ctx.log(describeStep(s));
        if (s.verdict !== 'held') {
          missed = s;
          break;
        }
        held = s;
      }
      const label = `capacity at p99 lateness ≤ ${w8.p99LimitMs} ms`;
      ctx.rec.add('W8', label, 'jobs/s', 'higher', system, held?.rate ?? 0);
      if (held?.p99 != null) {
        ctx.rec.add('W8', 'p99 lateness at the last step held', 'ms', 'lower', system, held.p99);
      }
      if (missed?.p99 != null) {
        ctx.rec.add('W8', 'p99 lateness at the first step missed', 'ms', 'lower', system, missed.p99);
      }
    }
  }
}
