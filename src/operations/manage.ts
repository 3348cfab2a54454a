/** Operations on single waiting or dead jobs: cancel, reschedule, dead-retry, dead-remove. */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import type { When } from './add.js';
import { bucketStart, guessAt, guessDelay, runWheelAware, type Layout } from './wheel.js';

/**
 * The bucket a waiting job probably sits in, from its meta `r` read beforehand (the script checks
 * it again: a job moved in between only costs one more call).
 */
async function currentBucket(
  client: RedisClient,
  keys: QueueKeys,
  id: string,
  layout: Layout,
): Promise<number[]> {
  if (layout.kind === 'zset') return [];
  const raw = await client.hget(keys.meta, id);
  if (raw === null) return [];
  try {
    const r = (JSON.parse(raw) as { r?: unknown }).r;
    return typeof r === 'number' ? [bucketStart(r, layout.granularityMs)] : [];
  } catch {
    return [];
  }
}

/** How many cancelled ids get() keeps answering 'cancelled' for, and for how long. */
export const KEEP_CANCELLED = { count: 10_000, ageMs: 7 * 24 * 3600 * 1000 };

/**
 * Cancel a waiting or running job (a running one's holder is told by a wake message); false when
 * there is nothing to cancel (unknown, dead, completed, already cancelled).
 */
export async function cancel(
  client: RedisClient,
  keys: QueueKeys,
  id: string,
  eventsCap: number,
  layout: Layout,
): Promise<boolean> {
  const guess = await currentBucket(client, keys, id, layout);
  const reply = await runWheelAware(client, 'cancel', keys, layout, guess, {
    keys: [
      keys.schedule,
      keys.jobs,
      keys.meta,
      keys.errors,
      keys.events,
      keys.active,
      keys.dead,
      keys.completed,
      keys.leases,
      keys.progress,
      keys.cancelled,
      keys.wake,
    ],
    args: [id, eventsCap, KEEP_CANCELLED.count, KEEP_CANCELLED.ageMs],
  });
  // 'waiting' or 'running' (bulk strings, as Buffers); 0 when nothing was cancelled.
  return Buffer.isBuffer(reply);
}

/** Move a waiting job to a new due time; null when it is not waiting. */
export async function reschedule(
  client: RedisClient,
  keys: QueueKeys,
  input: { id: string; when: When; eventsCap: number; layout: Layout },
): Promise<number | null> {
  const { when } = input;
  const layout = input.layout;
  const [kind, value] = 'delay' in when ? ['d', when.delay] : ['a', when.at];
  const guess = await currentBucket(client, keys, input.id, layout);
  if (layout.kind === 'wheel') {
    guess.push(...('delay' in when ? guessDelay(layout, when.delay) : guessAt(layout, when.at)));
  }
  const reply = await runWheelAware(client, 'reschedule', keys, layout, guess, {
    keys: [
      keys.schedule,
      keys.meta,
      keys.wake,
      keys.events,
      keys.jobs,
      keys.active,
      keys.dead,
      keys.completed,
    ],
    args: [input.id, kind, value, input.eventsCap],
  });
  return typeof reply === 'number' && reply >= 0 ? reply : null;
}

/** Move one dead job (or, with id null, up to `batch` of the oldest) back to waiting, due now; returns how many. */
export async function deadRetry(
  client: RedisClient,
  keys: QueueKeys,
  input: { id: string | null; batch: number; eventsCap: number; layout: Layout },
): Promise<number> {
  // Due now: in the wheel they go to ready, so no bucket is ever needed.
  const reply = await runWheelAware(client, 'dead-retry', keys, input.layout, [], {
    keys: [keys.dead, keys.schedule, keys.meta, keys.wake, keys.events],
    args: [input.id ?? '', input.batch, input.eventsCap],
  });
  return typeof reply === 'number' ? reply : 0;
}

/** Delete a dead job for good; false when it is not dead. */
export async function deadRemove(client: RedisClient, keys: QueueKeys, id: string): Promise<boolean> {
  const reply = await runScript(
    client,
    script('dead-remove'),
    [keys.dead, keys.jobs, keys.meta, keys.errors],
    [id],
  );
  return reply === 1;
}
