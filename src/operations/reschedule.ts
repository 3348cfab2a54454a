/** The `reschedule` operation (reschedule.lua): move a waiting job to a new due time. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import type { When } from './add.js';
import { UNKNOWN_GROUP_CONCURRENCY, waitingKeys } from './waiting-keys.js';
import { guessAt, guessDelay, runWheelAware, type Layout } from './wheel.js';

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
