/**
 * W6 crash recovery: two idle worker processes (concurrency 1) wait on a queue; one job is added;
 * the process that starts it is SIGKILLed at once; the figure is the time from the kill to the
 * other process starting the job (parent's monotonic clock, at message receipt). Each system gets
 * its own redis-server and all run at the same time: the wait is timers, not CPU.
 */
import { performance } from 'node:perf_hooks';
import type { Settings, SystemName } from '../adapters/adapter.js';
import { createAdapter } from '../adapters/index.js';
import { ChildWorker } from '../lib/child.js';
import { freshQueue, type Context } from '../lib/context.js';
import { startBenchRedis } from '../lib/redis.js';

/** Seconds from SIGKILL to the job's restart elsewhere, or null when it did not restart within the cap. */
async function recoveryCase(system: SystemName, settings: Settings, capMs: number): Promise<number | null> {
  const redis = await startBenchRedis();
  const queue = freshQueue('w6');
  const adapter = createAdapter(system, { url: redis.url, queue });
  const config = { system, url: redis.url, queue, concurrency: 1, settings, mode: 'hold' as const };
  const workers = await Promise.all([ChildWorker.start(config), ChildWorker.start(config)]);
  try {
    let holder: ChildWorker | undefined;
    let killedAt = 0;
    let timer: NodeJS.Timeout | undefined;
    const recovered = new Promise<number | null>((resolve) => {
      // A job no worker ever starts must not hang the run either.
      timer = setTimeout(() => resolve(null), 60_000);
      for (const worker of workers) {
        worker.onMessage = (message) => {
          if (message.type !== 'started') return;
          if (!holder) {
            // Kill on the first word from the holder: the lease or lock is as fresh as it gets.
            holder = worker;
            worker.kill('SIGKILL');
            killedAt = performance.now();
            clearTimeout(timer);
            timer = setTimeout(() => resolve(null), capMs);
          } else if (worker !== holder) {
            resolve(performance.now() - killedAt);
          }
        };
      }
    });
    await adapter.add({ payload: { i: 0, due: Date.now() }, delayMs: 0 });
    const ms = await recovered;
    clearTimeout(timer);
    return ms === null ? null : ms / 1000;
  } finally {
    await Promise.all(workers.map((w) => w.close(2_000)));
    await adapter.close();
    await redis.stop();
  }
}

/** Run W6 for every system and settings, all at once. */
export async function runW6(ctx: Context): Promise<void> {
  const { settings, capMs } = ctx.profile.w6;
  const cases = settings.flatMap((s) => ctx.systems.map((system) => ({ system, settings: s })));
  const results = await Promise.all(cases.map((c) => recoveryCase(c.system, c.settings, capMs[c.settings])));
  cases.forEach((c, i) => {
    const seconds = results[i] ?? null;
    const metric =
      c.settings === 'default'
        ? 'recovery after SIGKILL, defaults'
        : 'recovery after SIGKILL, 1 s lease / stall check';
    // Not recovered within the cap is recorded as Infinity (shown as "never within N s").
    ctx.rec.add('W6', metric, 's', 'lower', c.system, seconds ?? Infinity);
    ctx.rec.details[`W6 cap (${c.settings})`] = capMs[c.settings];
    ctx.log(
      `  W6 ${c.system} (${c.settings}): ${seconds === null ? `not within ${capMs[c.settings] / 1000} s` : `${seconds.toFixed(2)} s`}`,
    );
  });
}
