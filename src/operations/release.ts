/** The `release` operation: give a held job back without charging the attempt (release.lua). */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { guessDelay, runWheelAware, type Layout } from './wheel.js';

/**
 * Hand job `id` back, due again after `delayMs`. True when released; false when the lease was no
 * longer held (the reaper owns the job then).
 */
export async function release(
  client: RedisClient,
  keys: QueueKeys,
  input: { id: string; token: string; delayMs: number; eventsCap: number; layout: Layout },
): Promise<boolean> {
  const layout = input.layout;
  const guess = layout.kind === 'wheel' && input.delayMs > 0 ? guessDelay(layout, input.delayMs) : [];
  const reply = await runWheelAware(client, 'release', keys, layout, guess, {
    keys: [keys.schedule, keys.meta, keys.active, keys.leases, keys.wake, keys.events, keys.progress],
    args: [input.id, input.token, input.delayMs, input.eventsCap],
  });
  return reply === 1;
}
