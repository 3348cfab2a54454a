/**
 * Read-side operations on what waits, aware of the strategy: how many jobs fall due in each slice
 * of the coming time (the waiting ZSETs `s` and `p` by ZCOUNT, every job of `r` being due
 * already; the wheel by its buckets' lengths, a bucket's jobs falling due at its end, when it is
 * promoted), and the oldest dead job ids (for purge).
 */
import type { RedisClient } from '../redis/connection.js';
import { wheelBucketKey, type QueueKeys } from '../redis/keys.js';
import type { Layout } from './wheel.js';

/** Jobs already due at `now` (`overdue`), then per slice of `bucketMs` after `now`. */
export interface DueSlices {
  overdue: number;
  counts: number[];
}

/** Run a pipeline and return its replies as numbers, or throw the first error. */
async function numbers(pipeline: ReturnType<RedisClient['pipeline']>): Promise<number[]> {
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([err, value]) => {
    if (err) throw err;
    return Number(value);
  });
}

/**
 * How many of one partition's waiting jobs fall due in each of `buckets` slices of `bucketMs`
 * after `now`. Each pipeline stays in the partition's slot. Not one snapshot: a wheel bucket
 * promoted between the reads may be counted in ready and missed in its slice, or the other way.
 */
export async function dueSlices(
  client: RedisClient,
  keys: QueueKeys,
  layout: Layout,
  now: number,
  bucketMs: number,
  buckets: number,
): Promise<DueSlices> {
  // The default class (s) and the prioritized jobs not due yet (p) are both scored by due time;
  // the prioritized jobs in r are due already. Grouped jobs (gq) are not sliced: their members
  // are ordered by group, so counting them by due time would read every one (counts.lua gives
  // the due groups' number instead).
  const zset = client.pipeline();
  zset.zcount(keys.waiting, '-inf', now);
  zset.zcount(keys.prioWaiting, '-inf', now);
  zset.zcard(keys.prioReady);
  for (let i = 0; i < buckets; i++) {
    const [from, to] = [`(${now + i * bucketMs}`, now + (i + 1) * bucketMs];
    zset.zcount(keys.waiting, from, to);
    zset.zcount(keys.prioWaiting, from, to);
  }
  const values = await numbers(zset);
  const counts = Array.from(
    { length: buckets },
    (_, i) => (values[3 + 2 * i] ?? 0) + (values[4 + 2 * i] ?? 0),
  );
  const out: DueSlices = { overdue: (values[0] ?? 0) + (values[1] ?? 0) + (values[2] ?? 0), counts };
  if (layout.kind === 'zset') return out;
  const horizon = now + buckets * bucketMs;
  // Bucket start -> bucket end; only the buckets ending within the horizon are read.
  const index = await client.zrangebyscore(keys.wheel, '-inf', horizon, 'WITHSCORES');
  const lengths = client.pipeline();
  lengths.llen(keys.ready);
  for (let i = 0; i < index.length; i += 2) lengths.llen(wheelBucketKey(keys, Number(index[i])));
  const [ready = 0, ...perBucket] = await numbers(lengths);
  out.overdue += ready;
  perBucket.forEach((n, b) => {
    const end = Number(index[2 * b + 1]);
    if (end <= now) out.overdue += n;
    else {
      const slice = Math.min(buckets - 1, Math.floor((end - now - 1) / bucketMs));
      out.counts[slice] = (out.counts[slice] ?? 0) + n;
    }
  });
  return out;
}

/** The ids of the `limit` oldest dead jobs of one partition. */
export function oldestDead(client: RedisClient, keys: QueueKeys, limit: number): Promise<string[]> {
  return client.zrange(keys.dead, 0, limit - 1);
}
