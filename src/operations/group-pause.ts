/** The `group-pause` operation (group-pause.lua): keep workers from starting one group's jobs. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';

/** Pause group `group` in its partition; false when it was paused already. */
export async function pauseGroup(client: RedisClient, keys: QueueKeys, group: string): Promise<boolean> {
  const reply = await runScript(
    client,
    script('group-pause'),
    [keys.groupsWaiting, keys.groupsReady, keys.groupCounts],
    [group],
  );
  return reply === 1;
}
