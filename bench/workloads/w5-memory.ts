/** W5 memory: Redis used_memory per delayed job, for jobs whose JSON payload is exactly N bytes. */
import type { BenchPayload, SystemName } from '../adapters/adapter.js';
import { createAdapter } from '../adapters/index.js';
import { freshQueue, type Context } from '../lib/context.js';
import { reset, usedMemory } from '../lib/redis.js';
import { addInBulk } from './w1-throughput.js';

const FAR_MS = 3_600_000;

/** A payload whose JSON is `bytes` long. */
function paddedPayload(i: number, due: number, bytes: number): BenchPayload {
  const bare = JSON.stringify({ i, due, pad: '' }).length;
  return { i, due, pad: 'x'.repeat(Math.max(0, bytes - bare)) };
}

async function once(ctx: Context, system: SystemName): Promise<void> {
  const { control, url } = ctx.redis;
  const { jobs, payloadBytes } = ctx.profile.w5;
  await reset(control);
  const adapter = createAdapter(system, { url, queue: freshQueue('w5') });
  try {
    const before = await usedMemory(control);
    await addInBulk(
      ctx,
      (c) => adapter.addBulk(c),
      jobs,
      (i, now) => ({
        payload: paddedPayload(i, now + FAR_MS, payloadBytes),
        delayMs: FAR_MS,
      }),
    );
    const perJob = ((await usedMemory(control)) - before) / jobs;
    ctx.rec.add('W5', `bytes per delayed job (${payloadBytes} B payload)`, 'B', 'lower', system, perJob);
    ctx.log(`  W5 ${system}: ${perJob.toFixed(0)} B/job`);
  } finally {
    await adapter.close();
  }
}

/** Run W5 for every system and repetition. */
export async function runW5(ctx: Context): Promise<void> {
  for (let rep = 1; rep <= ctx.profile.w5.reps; rep++) {
    for (const system of ctx.systems) await once(ctx, system);
  }
}
