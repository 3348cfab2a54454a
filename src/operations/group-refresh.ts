/**
 * The `group-refresh` operation (group-refresh.lua): put a partition's groups back in the state
 * their jobs say, after the group bound changed.
 */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';

/** Groups one group-refresh.lua call puts back in their state. */
const REFRESH_BATCH = 500;

/**
 * Put every group of one partition that has running jobs or is paused back in the state its jobs
 * and running count say under `groupConcurrency` (group-refresh.lua), waking workers when one can
 * run. Those are the groups a changed bound can hold wrongly out of turn; gc holds exactly them
 * (and rate buckets), so this reads O(running groups), never the waiting jobs.
 */
export async function refreshGroups(
  client: RedisClient,
  keys: QueueKeys,
  groupConcurrency: number,
): Promise<void> {
  let cursor = '0';
  do {
    const [next, flat] = await client.hscan(keys.groupCounts, cursor, 'COUNT', REFRESH_BATCH);
    cursor = next;
    const groups = flat.filter((field, i) => i % 2 === 0 && !field.includes('\0'));
    for (let at = 0; at < groups.length; at += REFRESH_BATCH) {
      await runScript(
        client,
        script('group-refresh'),
        [keys.groupJobs, keys.groupsWaiting, keys.groupsReady, keys.groupCounts, keys.wake],
        [groupConcurrency, ...groups.slice(at, at + REFRESH_BATCH)],
      );
    }
  } while (cursor !== '0');
}
