/**
 * Reads the dashboard and the CLI need beyond the Queue API: which queues exist (SCAN, never
 * KEYS), the server clock, and how many jobs fall due in each slice of the coming hour (ZCOUNT).
 * Every key name comes from queueKeys().
 */
import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import { queueKeys, type QueueKeys } from '../redis/keys.js';

/** Names of the queues that hold any job, sorted; scans at most `limit` queues' worth of keys. */
export async function discoverQueues(client: RedisClient, limit = 10_000): Promise<string[]> {
  // Every job has a meta record while it is scheduled, active or dead, so the meta hash marks a live queue.
  const pattern = queueKeys('*').meta;
  const [before, after] = pattern.split('*') as [string, string];
  const names = new Set<string>();
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) names.add(key.slice(before.length, key.length - after.length));
    } while (cursor !== '0' && names.size < limit);
  }
  return [...names].sort();
}

/** The Redis server's clock in epoch ms: the clock every due time is measured on. */
export async function serverNow(client: RedisClient): Promise<number> {
  const [s, us] = await client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** Jobs due in each of `buckets` slices of `bucketMs` after `now`, plus those already due. */
export interface DueHistogram {
  start: number;
  bucketMs: number;
  /** Scheduled jobs whose due time is at or before `start`. */
  overdue: number;
  counts: number[];
}

/** How many scheduled jobs fall due in each slice of the next `buckets * bucketMs` ms: one pipelined ZCOUNT per slice. */
export async function dueHistogram(
  client: RedisClient,
  keys: Pick<QueueKeys, 'schedule'>,
  now: number,
  { bucketMs = 60_000, buckets = 60 } = {},
): Promise<DueHistogram> {
  const pipeline = client.pipeline();
  pipeline.zcount(keys.schedule, '-inf', now);
  for (let i = 0; i < buckets; i++) {
    pipeline.zcount(keys.schedule, `(${now + i * bucketMs}`, now + (i + 1) * bucketMs);
  }
  const replies = (await pipeline.exec()) ?? [];
  const values = replies.map(([err, value]) => {
    if (err) throw err;
    return Number(value);
  });
  return { start: now, bucketMs, overdue: values[0] ?? 0, counts: values.slice(1) };
}

/** The earliest due time in the schedule, or null when it is empty. */
export async function nextDue(
  client: RedisClient,
  keys: Pick<QueueKeys, 'schedule'>,
): Promise<number | null> {
  const head = await client.zrange(keys.schedule, 0, 0, 'WITHSCORES');
  return head[1] === undefined ? null : Number(head[1]);
}
