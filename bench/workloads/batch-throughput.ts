/**
 * Batch: the throughput of a batch handler (`batch: { size: 100 }`, issue 16) against single-job
 * handlers, delayq only (the other systems sell batches separately or not at all). N tiny jobs
 * already due are added in bulk, then one worker runs them all: one job per handler call at
 * concurrency 1 and at concurrency 100 (as many jobs in flight as one batch holds), and one batch
 * of up to 100 per call at concurrency 1. Timed from the first handler start to the last
 * completion (the ack applied); Redis CPU and commands per job from INFO deltas around the run.
 *
 * Unlike W1 the worker runs in the bench process (batches are not in the adapters' protocol),
 * so the three cases are compared with each other, not with W1's figures.
 * Run alone: `npm run bench:quick -- --only batch`.
 */
import { Queue, Worker, type WorkerOptions } from '../../src/index.js';
import { freshQueue, type Context } from '../lib/context.js';
import type { Profile } from '../lib/profile.js';
import { callsBetween, commandCalls, cpuMicros, scriptCallsBetween, startBenchRedis } from '../lib/redis.js';

/** Jobs per case: the full run's and the quick run's. */
const JOBS = { full: 20_000, quick: 2_000 } as const;

/** The cases: a name, and the worker options that make it. */
const CASES: ReadonlyArray<{ tag: string; options: WorkerOptions<number> & { batch?: { size: number } } }> = [
  { tag: 'single c1', options: { concurrency: 1 } },
  { tag: 'single c100', options: { concurrency: 100 } },
  { tag: 'batch 100 c1', options: { concurrency: 1, batch: { size: 100 } } },
];

async function once(
  ctx: Context,
  tag: string,
  options: WorkerOptions<number> & { batch?: { size: number } },
) {
  const count = JOBS[ctx.profile.name];
  const redis = await startBenchRedis();
  const name = freshQueue('batch');
  const queue = new Queue<number>(name, { connection: redis.url });
  let worker: Worker<number> | undefined;
  try {
    for (let first = 0; first < count; first += ctx.profile.bulkSize) {
      const size = Math.min(ctx.profile.bulkSize, count - first);
      await queue.addBulk(Array.from({ length: size }, (_, k) => ({ payload: first + k })));
    }
    const cpu0 = await cpuMicros(redis.control);
    const calls0 = await commandCalls(redis.control);
    let firstStart = 0;
    let completed = 0;
    let handlerCalls = 0;
    const done = new Promise<number>((resolve) => {
      const common = { connection: redis.url, logger: { warn: () => {}, error: console.error } };
      worker = options.batch
        ? new Worker<number>(
            name,
            async () => {
              firstStart ||= performance.now();
              handlerCalls++;
            },
            { ...common, ...options, batch: options.batch },
          )
        : new Worker<number>(
            name,
            async () => {
              firstStart ||= performance.now();
              handlerCalls++;
            },
            { ...common, ...options },
          );
      worker.on('completed', () => {
        if (++completed === count) resolve(performance.now());
      });
    });
    const end = await done;
    const cpu1 = await cpuMicros(redis.control);
    const calls1 = await commandCalls(redis.control);
    const elapsedMs = end - firstStart;
    const rate = (count / elapsedMs) * 1000;
    const commands = callsBetween(calls0, calls1) / count;
    const scripts = scriptCallsBetween(calls0, calls1) / count;
    ctx.rec.add('batch', `processing ${tag}`, 'jobs/s', 'higher', 'delayq', rate);
    ctx.rec.add('batch', `Redis CPU per job ${tag}`, 'µs', 'lower', 'delayq', (cpu1 - cpu0) / count);
    ctx.rec.add('batch', `Redis commands per job ${tag}`, 'cmds', 'lower', 'delayq', commands);
    ctx.rec.add('batch', `script calls per job ${tag}`, 'calls', 'lower', 'delayq', scripts);
    ctx.log(
      `  ${tag}: ${count} jobs in ${handlerCalls} handler calls, ${Math.round(rate)} jobs/s, ` +
        `Redis ${((cpu1 - cpu0) / count).toFixed(1)} µs/job, ${commands.toFixed(2)} commands/job, ` +
        `${scripts.toFixed(3)} script calls/job`,
    );
  } finally {
    await worker?.close({ timeoutMs: 5_000 });
    await queue.close();
    await redis.stop();
  }
}

/** What the workload does, for docs/benchmarks.md. */
export function describeBatchWorkload(profile: Pick<Profile, 'name' | 'bulkSize' | 'reps'>): string {
  return `delayq only. ${JOBS[profile.name].toLocaleString('en-US')} tiny jobs already due, added with addBulk in chunks of ${profile.bulkSize}, then run by one worker in the bench process (batches are not in the adapters' protocol, so these figures compare with each other, not with W1's): one job per handler call at concurrency 1 and 100, and \`batch: { size: 100 }\` at concurrency 1 (one batch in flight). Each case on a redis-server of its own; rate from the first handler start to the last completion (ack applied); Redis CPU, commands and script calls per job from INFO deltas over the run; ${profile.reps} repetition(s). \`--only batch\` runs it alone.`;
}

/** Run the batch workload (delayq only) for every case and repetition. */
export async function runBatchThroughput(ctx: Context): Promise<void> {
  if (!ctx.systems.includes('delayq')) return;
  for (let rep = 1; rep <= ctx.profile.reps; rep++) {
    for (const { tag, options } of CASES) await once(ctx, tag, options);
  }
}
