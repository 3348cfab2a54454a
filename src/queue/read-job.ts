/**
 * queue.get(): everything known about one job, decoded, with its log lines and, for a flow's
 * parent, its children's states (from their own queue when one is in another, one Redis only).
 */
import type { QueueContext } from '../definition/context.js';
import { getJob } from '../operations/get.js';
import { readLogs } from '../operations/log.js';
import { queueKeys } from '../redis/keys.js';
import { toInfo, type JobInfo } from './info.js';

/** Job `id` of `context`'s queue, or null when there is no such job. */
export async function readJob<T, R>(context: QueueContext, id: string): Promise<JobInfo<T, R> | null> {
  const { layout, codec } = await context.settle();
  const client = context.client;
  // The log lines are read beside the record (one round trip, same partition): the lines only
  // grow while the job is kept, so a read a moment apart shows no other job's.
  const found = await context.findById(id, async (keys) => {
    const [raw, logs] = await Promise.all([getJob(client, keys, id, layout), readLogs(client, keys, id)]);
    if (!raw) return null;
    // A flow's parent: its children's states, from the same partition (flows are unpartitioned),
    // or from their own queue (children in another queue, one Redis only; never a wheel).
    const kids = raw.children
      ? await Promise.all(
          raw.children.map((kid) =>
            getJob(client, kid.queue === undefined ? keys : queueKeys(kid.queue), kid.id, layout),
          ),
        )
      : undefined;
    return { raw, logs, kids };
  });
  if (!found) return null;
  const info = toInfo<T, R>(codec, found.raw, found.logs);
  if (found.raw.parent !== undefined) info.parent = found.raw.parent;
  if (found.raw.parentQueue !== undefined) info.parentQueue = found.raw.parentQueue;
  if (found.raw.children && found.kids) {
    info.children = found.raw.children.map((kid, i) => ({
      id: kid.id,
      state: found.kids?.[i]?.state ?? 'unknown',
      ...(kid.queue !== undefined && { queue: kid.queue }),
    }));
  }
  return info;
}
