/** Operations on single waiting or dead jobs: cancel, reschedule, dead-retry, dead-remove. */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import type { When } from './add.js';

/** Remove a waiting job; false when it is not waiting (unknown, running or dead). */
export async function cancel(
  client: RedisClient,
  keys: QueueKeys,
  id: string,
  eventsCap: number,
): Promise<boolean> {
  const reply = await runScript(
    client,
    script('cancel'),
    [keys.schedule, keys.jobs, keys.meta, keys.errors, keys.events],
    [id, eventsCap],
  );
  return reply === 1;
}

/** Move a waiting job to a new due time; null when it is not waiting. */
export async function reschedule(
  client: RedisClient,
  keys: QueueKeys,
  input: { id: string; when: When; eventsCap: number },
): Promise<number | null> {
  const { when } = input;
  const [kind, value] = 'delay' in when ? ['d', when.delay] : ['a', when.at];
  const reply = await runScript(
    client,
    script('reschedule'),
    [keys.schedule, keys.meta, keys.wake, keys.events],
    [input.id, kind, value, input.eventsCap],
  );
  return typeof reply === 'number' && reply >= 0 ? reply : null;
}

/** Move one dead job (or, with id null, up to `batch` of the oldest) back to the schedule; returns how many. */
export async function deadRetry(
  client: RedisClient,
  keys: QueueKeys,
  input: { id: string | null; batch: number; eventsCap: number },
): Promise<number> {
  const reply = await runScript(
    client,
    script('dead-retry'),
    [keys.dead, keys.schedule, keys.meta, keys.wake, keys.events],
    [input.id ?? '', input.batch, input.eventsCap],
  );
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
