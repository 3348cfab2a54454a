/** The `schedule-remove` operation (schedule-remove.lua): delete a schedule and take back its waiting next occurrence. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { waitingKeys } from './waiting-keys.js';
import { runWheelAware, type Layout } from './wheel.js';

/** Remove schedule `name`; false when there was no such schedule. */
export async function removeSchedule(
  client: RedisClient,
  keys: QueueKeys,
  name: string,
  layout: Layout,
): Promise<boolean> {
  // The waiting occurrence is in a bucket the script names when it needs it.
  const reply = await runWheelAware(client, 'schedule-remove', keys, layout, [], {
    keys: [
      keys.schedules,
      keys.schedulePayloads,
      keys.scheduleLast,
      ...waitingKeys(keys),
      keys.records,
      keys.errors,
    ],
    args: [name],
  });
  return reply === 1;
}
