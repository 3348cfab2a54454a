/** The `cancel` operation (cancel.lua): take a job out of waiting, or end its running attempt. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { UNKNOWN_GROUP_CONCURRENCY, waitingKeys } from './waiting-keys.js';
import { runWheelAware, type Layout } from './wheel.js';

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
      keys.dead,
      keys.flows,
      keys.flowsWaiting,
    ],
    args: [input.id, input.groupConcurrency ?? UNKNOWN_GROUP_CONCURRENCY, input.eventsCap],
  });
  // 'waiting' or 'running' (bulk strings, as Buffers); 0 when nothing was cancelled.
  if (!Buffer.isBuffer(reply)) return null;
  const how = reply.toString();
  if (how !== 'waiting' && how !== 'running') throw new Error(`cancel: unexpected reply ${how}`);
  return how;
}
