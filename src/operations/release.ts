/** The `release` operation: give a held job back without charging the attempt (release.lua). */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';

/**
 * Hand job `id` back, due again after `delayMs`. True when released; false when the lease was no
 * longer held (the reaper owns the job then).
 */
export async function release(
  client: RedisClient,
  keys: QueueKeys,
  input: { id: string; token: string; delayMs: number; eventsCap: number },
): Promise<boolean> {
  const reply = await runScript(
    client,
    script('release'),
    [keys.schedule, keys.meta, keys.active, keys.leases, keys.wake, keys.events],
    [input.id, input.token, input.delayMs, input.eventsCap],
  );
  return reply === 1;
}
