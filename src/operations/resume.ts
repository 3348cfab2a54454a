/**
 * The `resume` operation (resume.lua): lift a pause on every partition of a queue, one call per
 * partition sent at once, and wake the workers of those that have jobs.
 */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num } from './reply.js';

/** Resume every partition (and wake all its workers); true when at least one was paused. */
export async function resume(client: RedisClient, partitions: readonly QueueKeys[]): Promise<boolean> {
  const replies = await Promise.all(
    partitions.map(async (keys) =>
      asArray(
        await runScript(
          client,
          script('resume'),
          [
            keys.paused,
            keys.wake,
            keys.waiting,
            keys.prioWaiting,
            keys.prioReady,
            keys.groupsWaiting,
            keys.ready,
          ],
          [],
        ),
        'resume',
      ),
    ),
  );
  return replies.some((reply) => num(reply, 1, 'resume') === 1);
}
