/**
 * Partitioned queues (`partitions: P`): which partition a job id belongs to, and sending items to
 * their partitions. The keys of each partition come from src/redis/keys.ts; that every client of a
 * queue agrees on P is the queue's config record's duty (src/definition/).
 */
import { placementKeyOfLease } from '../members/lease.js';

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
 * The partition a job lives in: a grouped job's is its group's (docs/ARCHITECTURE.md §9), so
 * one group's running count is one field of one partition and its bound holds across all workers;
 * an ungrouped job's is its id's.
 */
export function placementOf(id: string, group: string | undefined, partitions: number): number {
  return partitionOf(group ?? id, partitions);
}

/**
 * The partition a new job goes to on a queue of `count` partitions whose ids and groups the user
 * chose are placed by `base` (the count before its first re-partition; `count` when never): a
 * chosen id or group never changes partition, so an id cannot exist twice (add's dedupe is one
 * partition's) and a group's bound stays one partition's; a generated id is new anyway and may go
 * to any partition, so the current count spreads such jobs over the new partitions too.
 */
export function placementOfNew(
  id: string,
  group: string | undefined,
  generated: boolean,
  count: number,
  base: number,
): number {
  if (group === undefined && generated) return partitionOf(id, count);
  return partitionOf(group ?? id, base);
}

/**
 * The partition of the job a lease member holds: its group's or its id's, as placementOf. The
 * member names the group (src/members/lease.ts), so no record is read to find the partition.
 */
export function partitionOfMember(member: string, partitions: number): number {
  return partitions === 1 ? 0 : partitionOf(placementKeyOfLease(member), partitions);
}

/** Cuts one partition's items, in order, into chunks: the length of each (all positive). */
export type ChunkLengths<I> = (items: readonly I[]) => readonly number[];

/**
 * Send `items` to their partitions (the partition of each item's id among `partitions`, or what
 * `partitions` returns for it), in chunks of at most `batch` per call (or as `batch` cuts
 * them: a function given one partition's items, in order, that returns the length of each chunk),
 * and return the outputs in the items' order. The partitions go at once (on a Cluster their masters work in parallel);
 * within one partition at most `inFlight` calls are out at a time, the next sent as one answers.
 * `send` must return one output per item it is given, in order. Its `upcoming` is the chunk the
 * partition sends next (the very array `send` will be given), if any: `send` may get it ready
 * once its own call is written, while that call is out, so it goes as soon as a call answers.
 */
export async function mapByPartition<I, O>(
  items: readonly I[],
  partitions: number | ((item: I) => number),
  idOf: (item: I) => string,
  send: (partition: number, items: I[], upcoming: I[] | undefined) => Promise<readonly O[]>,
  batch: number | ChunkLengths<I> = Infinity,
  inFlight = Infinity,
): Promise<O[]> {
  const groups = new Map<number, number[]>();
  items.forEach((item, index) => {
    const p = typeof partitions === 'number' ? partitionOf(idOf(item), partitions) : partitions(item);
    const group = groups.get(p);
    if (group) group.push(index);
    else groups.set(p, [index]);
  });
  const outputs: O[] = [];
  await Promise.all(
    [...groups].map(async ([partition, indexes]) => {
      const chunks: number[][] = [];
      if (typeof batch === 'number') {
        for (let i = 0; i < indexes.length; i += batch) chunks.push(indexes.slice(i, i + batch));
      } else {
        let at = 0;
        for (const length of batch(indexes.map((i) => items[i]!))) {
          chunks.push(indexes.slice(at, (at += length)));
        }
        if (at !== indexes.length)
          throw new Error(`mapByPartition: chunks of ${at} items for ${indexes.length}`);
      }
      const chunkItems = chunks.map((chunk) => chunk.map((i) => items[i]!));
      // `inFlight` workers take the chunks in order: each sends its next when its last answered.
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < chunks.length) {
          const k = next++;
          const replies = await send(partition, chunkItems[k]!, chunkItems[next]);
          chunks[k]!.forEach((index, i) => (outputs[index] = replies[i]!));
        }
      };
      await Promise.all(Array.from({ length: Math.min(inFlight, chunks.length) }, lane));
    }),
  );
  return outputs;
}
