/**
 * Partitioned queues (`partitions: P`): which partition a job id belongs to, and the check that
 * every producer and worker of a queue agrees on P. The keys of each partition come from
 * src/redis/keys.ts.
 */
import { PartitionMismatchError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { partitionCountKey, queueKeys } from '../redis/keys.js';

/**
 * The partition of job `id` among `partitions`: FNV-1a (32 bit) of its UTF-8 bytes, mod P. Stable
 * across processes, versions and languages, so get, cancel and reschedule by id go to one slot.
 */
export function partitionOf(id: string, partitions: number): number {
  if (partitions === 1) return 0;
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(id, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}

/** The partition count recorded for queue `name`, or 1 when none is (an unpartitioned queue). */
export async function readPartitionCount(client: RedisClient, name: string): Promise<number> {
  const stored = await client.get(partitionCountKey(name));
  return stored === null ? 1 : Number(stored);
}

/**
 * Settle the partition count of queue `name` with the one recorded in Redis, and throw
 * PartitionMismatchError naming both when they differ. P = 1 writes nothing (an unpartitioned
 * queue keeps exactly the keys it always had) and fails only when a count above 1 is recorded. P > 1
 * refuses a queue already used unpartitioned (its own keys hold a layout or jobs), then records P
 * with SET NX: of two first users with different counts, the second fails.
 */
export async function checkPartitionCount(
  client: RedisClient,
  name: string,
  partitions: number,
): Promise<void> {
  const key = partitionCountKey(name);
  const stored = await client.get(key);
  if (stored !== null) {
    if (Number(stored) !== partitions) throw new PartitionMismatchError(name, Number(stored), partitions);
    return;
  }
  if (partitions === 1) return;
  // All in the queue's own tag: one slot, so one multi-key EXISTS works on a Cluster too.
  const base = queueKeys(name);
  const used = await client.exists(base.layout, base.schedule, base.jobs, base.active, base.dead, base.ready);
  if (used > 0) throw new PartitionMismatchError(name, 1, partitions);
  const set = await client.set(key, String(partitions), 'NX');
  if (set === 'OK') return;
  const winner = Number(await client.get(key));
  if (winner !== partitions) throw new PartitionMismatchError(name, winner, partitions);
}

/**
 * Send `items` to their partitions, in chunks of at most `batch` per call, all calls at once (on a
 * Cluster the partitions' masters work in parallel), and return the outputs in the items' order.
 * `send` must return one output per item it is given, in order.
 */
export async function mapByPartition<I, O>(
  items: readonly I[],
  partitions: number,
  idOf: (item: I) => string,
  send: (partition: number, items: I[]) => Promise<readonly O[]>,
  batch = Infinity,
): Promise<O[]> {
  const groups = new Map<number, number[]>();
  items.forEach((item, index) => {
    const p = partitionOf(idOf(item), partitions);
    const group = groups.get(p);
    if (group) group.push(index);
    else groups.set(p, [index]);
  });
  const calls: Array<{ partition: number; indexes: number[] }> = [];
  for (const [partition, indexes] of groups) {
    for (let i = 0; i < indexes.length; i += batch)
      calls.push({ partition, indexes: indexes.slice(i, i + batch) });
  }
  const replies = await Promise.all(
    calls.map((call) =>
      send(
        call.partition,
        call.indexes.map((i) => items[i]!),
      ),
    ),
  );
  const outputs: O[] = [];
  calls.forEach((call, c) => call.indexes.forEach((index, i) => (outputs[index] = replies[c]![i]!)));
  return outputs;
}
