/** The `schedule-remove` operation: delete a schedule and take back its waiting next occurrence. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { wheelTail, withBuckets, type Layout } from '../operations/wheel.js';

/** Remove schedule `name`; false when there was no such schedule. */
export async function removeSchedule(
  client: RedisClient,
  keys: QueueKeys,
  name: string,
  layout: Layout,
): Promise<boolean> {
  // The waiting occurrence is in a bucket the script names when it needs it.
  const reply = await withBuckets(layout, [], (starts) => {
    const tail = wheelTail(keys, layout, starts);
    return runScript(
      client,
      script('schedule-remove'),
      [
        keys.schedules,
        keys.schedulePayloads,
        keys.scheduleLast,
        keys.schedule,
        keys.jobs,
        keys.meta,
        keys.active,
        keys.dead,
        keys.completed,
        ...tail.keys,
      ],
      [name, ...tail.args],
    );
  });
  return reply === 1;
}
