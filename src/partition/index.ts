/**
 * Partitioned queues (`partitions: P`): which partition a job id belongs to, and sending items to
 * their partitions. The keys of each partition come from src/redis/keys.ts; that every client of a
 * queue agrees on P is the queue's config record's duty (src/definition/).
 */

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
