/** The `schedule-remove` operation: delete a schedule and take back its waiting next occurrence. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';

/** Remove schedule `name`; false when there was no such schedule. */
export async function removeSchedule(client: RedisClient, keys: QueueKeys, name: string): Promise<boolean> {
  const reply = await runScript(
    client,
    script('schedule-remove'),
    [keys.schedules, keys.schedulePayloads, keys.scheduleLast, keys.schedule, keys.jobs, keys.meta],
    [name],
  );
  return reply === 1;
}
