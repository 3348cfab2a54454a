/** The `dead-retry` operation (dead-retry.lua): dead jobs back to waiting, due now. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { UNKNOWN_GROUP_CONCURRENCY, waitingKeys } from './waiting-keys.js';
import { runWheelAware, type Layout } from './wheel.js';

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
