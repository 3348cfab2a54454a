/**
 * Reads the dashboard and the CLI need beyond the Queue API: which queues exist (SCAN, never
 * KEYS), the server clock, and how many jobs fall due in each slice of the coming hour (ZCOUNT).
 * Every key name comes from queueKeys().
 */
import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import { Queue } from '../queue.js';
import { readPartitionCount } from '../partition/index.js';
import { queueKeys, queueNameOfTag, type QueueKeys } from '../redis/keys.js';

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
      for (const key of keys) names.add(queueNameOfTag(key.slice(before.length, key.length - after.length)));
    } while (cursor !== '0' && names.size < limit);
  }
  return [...names].sort();
}

/** A Queue for `name` on `client` with the partition count recorded for it (1 when none is). */
export async function openQueue(client: RedisClient, name: string): Promise<Queue> {
  return new Queue(name, { connection: client, partitions: await readPartitionCount(client, name) });
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

/**
 * How many scheduled jobs fall due in each slice of the next `buckets * bucketMs` ms, summed over
 * the partitions: one pipeline of a ZCOUNT per slice per partition (each pipeline stays in one slot).
 */
export async function dueHistogram(
  client: RedisClient,
  partitions: ReadonlyArray<Pick<QueueKeys, 'schedule'>>,
  now: number,
  { bucketMs = 60_000, buckets = 60 } = {},
): Promise<DueHistogram> {
  const perPartition = await Promise.all(
    partitions.map(async (keys) => {
      const pipeline = client.pipeline();
      pipeline.zcount(keys.schedule, '-inf', now);
      for (let i = 0; i < buckets; i++) {
        pipeline.zcount(keys.schedule, `(${now + i * bucketMs}`, now + (i + 1) * bucketMs);
      }
      const replies = (await pipeline.exec()) ?? [];
      return replies.map(([err, value]) => {
        if (err) throw err;
        return Number(value);
      });
    }),
  );
  const values = perPartition.reduce((sum, v) => sum.map((n, i) => n + (v[i] ?? 0)));
  return { start: now, bucketMs, overdue: values[0] ?? 0, counts: values.slice(1) };
}

/** The earliest due time over the partitions' schedules, or null when all are empty. */
export async function nextDue(
  client: RedisClient,
  partitions: ReadonlyArray<Pick<QueueKeys, 'schedule'>>,
): Promise<number | null> {
  const heads = await Promise.all(partitions.map((keys) => client.zrange(keys.schedule, 0, 0, 'WITHSCORES')));
  const due = heads.filter((head) => head[1] !== undefined).map((head) => Number(head[1]));
  return due.length === 0 ? null : Math.min(...due);
}
