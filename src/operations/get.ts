/** The `get` operation (get.lua): everything stored about one job, read in one step. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { rawJob, type RawJob } from './raw-job.js';
import { optionalStr, str } from './reply.js';
import { wheelTail, type Layout } from './wheel.js';

/** Everything about job `id`, or null when there is no such job. */
export async function getJob(
  client: RedisClient,
  keys: QueueKeys,
  id: string,
  layout: Layout,
): Promise<RawJob | null> {
  // The wheel's read keys (wheel.lua's wheel_keys) and granularity, no bucket.
  const tail = wheelTail(keys, layout);
  const reply = await runScript(
    client,
    script('get'),
    [
      keys.records,
      keys.waiting,
      keys.prioWaiting,
      keys.prioReady,
      keys.groupJobs,
      keys.leases,
      keys.completed,
      keys.cancelled,
      keys.dead,
      keys.errors,
      keys.holders,
      keys.progress,
      keys.flows,
      keys.flowsWaiting,
      ...tail.keys,
    ],
    [id, ...tail.args],
  );
  if (!Array.isArray(reply)) return null;
  const raw = rawJob(id, str(reply, 0, 'get'), reply, 1, 'get');
  const parent = optionalStr(reply, 7);
  const children = optionalStr(reply, 8);
  if (parent !== null) {
    // '<parent>\1<its queue>' for a parent in another queue (flow.lua).
    const [id, queue] = parent.split('\u0001');
    raw.parent = id!;
    if (queue !== undefined) raw.parentQueue = queue;
  }
  // Ids hold no control character, so '\0' joins them unambiguously; a child in another queue
  // is '<id>\1<queue>'.
  if (children !== null) raw.children = children.split('\0').map(flowEntry);
  return raw;
}

/** A children list's entry (flow.lua): the child's id, and its queue when not its parent's. */
export function flowEntry(entry: string): { id: string; queue?: string } {
  const [id, queue] = entry.split('\u0001');
  return queue === undefined ? { id: id! } : { id: id!, queue };
}
