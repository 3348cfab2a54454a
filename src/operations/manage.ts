/** Operations on single waiting, running or dead jobs: cancel, reschedule, dead-retry, dead-remove. */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import type { When } from './add.js';
import { UNKNOWN_GROUP_CONCURRENCY, waitingKeys } from './waiting-keys.js';
import { guessAt, guessDelay, runWheelAware, type Layout } from './wheel.js';

/** Where a cancel found the job: waiting (taken out of its set) or running (its lease ended). */
export type CancelOutcome = 'waiting' | 'running';

/**
 * Cancel a waiting or running job (a running one's holder is told by a `C <member>` wake
 * message); null when there is nothing to cancel (unknown, dead, completed, already cancelled).
 */
export async function cancel(
  client: RedisClient,
  keys: QueueKeys,
  /** groupConcurrency: the queue's, when known (a cancelled job's group is put back exactly). */
  input: { id: string; eventsCap: number; layout: Layout; groupConcurrency?: number },
): Promise<CancelOutcome | null> {
  const reply = await runWheelAware(client, 'cancel', keys, input.layout, [], {
    keys: [
      ...waitingKeys(keys),
      keys.records,
      keys.leases,
      keys.cancelled,
      keys.errors,
      keys.wake,
      keys.counters,
      keys.events,
      keys.progress,
    ],
    args: [input.id, input.groupConcurrency ?? UNKNOWN_GROUP_CONCURRENCY, input.eventsCap],
  });
  // 'waiting' or 'running' (bulk strings, as Buffers); 0 when nothing was cancelled.
  if (!Buffer.isBuffer(reply)) return null;
  const how = reply.toString();
  if (how !== 'waiting' && how !== 'running') throw new Error(`cancel: unexpected reply ${how}`);
  return how;
}

/** Move a waiting job to a new due time; the new due time, or null when it is not waiting. */
export async function reschedule(
  client: RedisClient,
  keys: QueueKeys,
  input: { id: string; when: When; eventsCap: number; layout: Layout; groupConcurrency?: number },
): Promise<number | null> {
  const { when, layout } = input;
  const [kind, value] = 'delay' in when ? ['d', when.delay] : ['a', when.at];
  const guess =
    layout.kind === 'wheel'
      ? 'delay' in when
        ? guessDelay(layout, when.delay)
        : guessAt(layout, when.at)
      : [];
  const reply = await runWheelAware(client, 'reschedule', keys, layout, guess, {
    keys: [...waitingKeys(keys), keys.records, keys.wake, keys.events],
    args: [input.id, kind, value, input.groupConcurrency ?? UNKNOWN_GROUP_CONCURRENCY, input.eventsCap],
  });
  return typeof reply === 'number' && reply >= 0 ? reply : null;
}

/** Move one dead job (or, with id null, up to `batch` of the oldest) back to waiting, due now; returns how many. */
export async function deadRetry(
  client: RedisClient,
  keys: QueueKeys,
  input: { id: string | null; batch: number; eventsCap: number; layout: Layout; groupConcurrency?: number },
): Promise<number> {
  // Due now: in the wheel they go to ready, so no bucket is ever needed.
  const reply = await runWheelAware(client, 'dead-retry', keys, input.layout, [], {
    keys: [keys.dead, keys.records, keys.errors, ...waitingKeys(keys), keys.wake, keys.events, keys.counters],
    args: [input.id ?? '', input.batch, input.groupConcurrency ?? UNKNOWN_GROUP_CONCURRENCY, input.eventsCap],
  });
  return typeof reply === 'number' ? reply : 0;
}

/** Delete a dead job for good; false when it is not dead. */
export async function deadRemove(client: RedisClient, keys: QueueKeys, id: string): Promise<boolean> {
  const reply = await runScript(
    client,
    script('dead-remove'),
    [keys.dead, keys.records, keys.errors, keys.logs],
    [id],
  );
  return reply === 1;
}
