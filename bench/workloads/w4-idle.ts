/**
 * W4 idle cost: Redis commands per second caused by one idle worker (concurrency 1), on an empty
 * queue and with jobs waiting far in the future. Counted from INFO commandstats, which includes the
 * commands scripts run. Every (system, case) pair gets its own redis-server and runs at the same
 * time as the others: idle workers do not compete for CPU, and one window covers all of them.
 */
import type { SystemName } from '../adapters/adapter.js';
import { createAdapter } from '../adapters/index.js';
import { ChildWorker } from '../lib/child.js';
import { freshQueue, sleep, type Context } from '../lib/context.js';
import { callsBetween, commandCalls, startBenchRedis } from '../lib/redis.js';
import { addInBulk } from './w1-throughput.js';

const FAR_MS = 24 * 3_600_000;

async function idleCase(
  ctx: Context,
  system: SystemName,
  waiting: number,
): Promise<{ perSecond: number; byCommand: Record<string, number> }> {
  const redis = await startBenchRedis();
  const queue = freshQueue('w4');
  const adapter = createAdapter(system, { url: redis.url, queue });
  let child: ChildWorker | undefined;
  try {
    if (waiting > 0) {
      await addInBulk(
        ctx,
        (c) => adapter.addBulk(c),
        waiting,
        (i, now) => ({
          payload: { i, due: now + FAR_MS },
          delayMs: FAR_MS,
        }),
      );
    }
    child = await ChildWorker.start({
      system,
      url: redis.url,
      queue,
      concurrency: 1,
      settings: 'default',
      mode: 'each',
    });
    await sleep(ctx.profile.w4.warmupMs);
    const before = await commandCalls(redis.control);
    await sleep(ctx.profile.w4.windowMs);
    const after = await commandCalls(redis.control);
    const byCommand: Record<string, number> = {};
    for (const [name, calls] of after) {
      const delta = calls - (before.get(name) ?? 0);
      if (delta > 0 && name !== 'info') byCommand[name] = delta;
    }
    return { perSecond: callsBetween(before, after) / (ctx.profile.w4.windowMs / 1000), byCommand };
  } finally {
    await child?.close();
    await adapter.close();
    await redis.stop();
  }
}

/** Run W4: every system, empty and with jobs waiting, all at once. */
export async function runW4(ctx: Context): Promise<void> {
  const cases = ctx.systems.flatMap((system) =>
    [0, ctx.profile.w4.waiting].map((waiting) => ({ system, waiting })),
  );
  const results = await Promise.all(cases.map(({ system, waiting }) => idleCase(ctx, system, waiting)));
  const details: Record<string, unknown> = {};
  cases.forEach(({ system, waiting }, i) => {
    const { perSecond, byCommand } = results[i]!;
    const metric =
      waiting === 0 ? 'idle commands/s, empty queue' : `idle commands/s, ${waiting} jobs waiting`;
    ctx.rec.add('W4', metric, 'cmds/s', 'lower', system, perSecond);
    details[`${system}, ${waiting} waiting`] = byCommand;
    ctx.log(
      `  W4 ${system} (${waiting} waiting): ${perSecond.toFixed(2)} commands/s ${JSON.stringify(byCommand)}`,
    );
  });
  ctx.rec.details['W4 commands in the window, by command'] = details;
}
