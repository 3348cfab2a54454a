/** The `group-cancel` operation (group-cancel.lua): cancel a chunk of one group's waiting jobs. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num } from './reply.js';

/** Most waiting jobs one group-cancel.lua call cancels: a big group is cancelled in chunks. */
export const GROUP_CANCEL_CHUNK = 500;

/** Cancel up to `max` of group `group`'s waiting jobs (earliest first): how many, and how many are left. */
export async function cancelGroupChunk(
  client: RedisClient,
  keys: QueueKeys,
  input: { group: string; max: number; eventsCap: number },
): Promise<{ cancelled: number; left: number }> {
  const reply = asArray(
    await runScript(
      client,
      script('group-cancel'),
      [
        keys.groupJobs,
        keys.groupsWaiting,
        keys.groupsReady,
        keys.groupCounts,
        keys.groupBacklog,
        keys.records,
        keys.cancelled,
        keys.errors,
        keys.counters,
        keys.events,
      ],
      [input.group, input.max, input.eventsCap],
    ),
    'group-cancel',
  );
  return { cancelled: num(reply, 0, 'group-cancel'), left: num(reply, 1, 'group-cancel') };
}
