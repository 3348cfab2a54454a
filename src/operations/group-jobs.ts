/** The `group-jobs` operation (group-jobs.lua): a page of one group's waiting or running jobs. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { rawJob, type RawJob } from './raw-job.js';
import { asArray, str } from './reply.js';

/** A page of group `group`'s waiting jobs (due order) or running ones (lease deadline order). */
export async function groupJobs(
  client: RedisClient,
  keys: QueueKeys,
  input: { state: 'scheduled' | 'active'; group: string; offset: number; limit: number },
): Promise<RawJob[]> {
  const scriptState = input.state === 'scheduled' ? 'waiting' : 'active';
  const reply = asArray(
    await runScript(
      client,
      script('group-jobs'),
      [keys.records, keys.groupJobs, keys.leases, keys.errors, keys.holders, keys.progress],
      [scriptState, input.group, input.offset, input.limit],
    ),
    'group-jobs',
  );
  const out: RawJob[] = [];
  for (let i = 0; i + 6 < reply.length; i += 7) {
    out.push(rawJob(str(reply, i, 'group-jobs'), scriptState, reply, i + 1, 'group-jobs'));
  }
  return out;
}
