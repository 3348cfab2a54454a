/** The `group-resume` operation (group-resume.lua): lift a group's pause. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { UNKNOWN_GROUP_CONCURRENCY } from './waiting-keys.js';

/** Resume group `group`, waking workers when it can run; false when it was not paused. */
export async function resumeGroup(
  client: RedisClient,
  keys: QueueKeys,
  group: string,
  groupConcurrency: number = UNKNOWN_GROUP_CONCURRENCY,
): Promise<boolean> {
  const reply = await runScript(
    client,
    script('group-resume'),
    [keys.groupJobs, keys.groupsWaiting, keys.groupsReady, keys.groupCounts, keys.wake],
    [group, groupConcurrency],
  );
  return reply === 1;
}
