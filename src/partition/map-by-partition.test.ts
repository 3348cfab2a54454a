import { describe, expect, it } from 'vitest';
import { mapByPartition, partitionOf } from './index.js';

/** A send whose calls stay open until released, recording what was out at once. */
function controlledSend() {
  const open: Array<{ partition: number; items: string[]; release: () => void }> = [];
  const sent: Array<{ partition: number; items: string[] }> = [];
  let most = new Map<number, number>();
  const send = (partition: number, items: string[]): Promise<string[]> =>
    new Promise((resolve) => {
      sent.push({ partition, items });
      const call = { partition, items, release: () => resolve(items.map((item) => `out:${item}`)) };
      open.push(call);
      const now = open.filter((c) => c.partition === partition).length;
      most = new Map(most).set(partition, Math.max(most.get(partition) ?? 0, now));
    });
  /** Answer the oldest open call (of `partition`, if given). */
  const answer = async (partition?: number): Promise<void> => {
    const at = open.findIndex((c) => partition === undefined || c.partition === partition);
    if (at < 0) throw new Error('no open call to answer');
    open.splice(at, 1)[0]!.release();
    // Let the lane that was waiting send its next call.
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { send, sent, open, answer, mostOpen: () => most };
}

/** Ids that land in partitions 0 and 1 of 2, `n` of each. */
function idsOfTwoPartitions(n: number): { p0: string[]; p1: string[] } {
  const p0: string[] = [];
  const p1: string[] = [];
  for (let i = 0; p0.length < n || p1.length < n; i++) {
    const id = `job-${i}`;
    const list = partitionOf(id, 2) === 0 ? p0 : p1;
    if (list.length < n) list.push(id);
  }
  return { p0, p1 };
}

describe('mapByPartition', () => {
  it('keeps at most inFlight calls out per partition, sends the chunks in order, and answers in item order', async () => {
    const ids = Array.from({ length: 10 }, (_, i) => `a${i}`);
    const s = controlledSend();
    const done = mapByPartition(ids, 1, (id) => id, s.send, 2, 2);
    await new Promise((resolve) => setImmediate(resolve));
    // Five chunks of two; only two out before any answer.
    expect(s.sent.map((c) => c.items)).toEqual([
      ['a0', 'a1'],
      ['a2', 'a3'],
    ]);
    while (s.open.length > 0) await s.answer();
    expect(await done).toEqual(ids.map((id) => `out:${id}`));
    expect(s.sent.map((c) => c.items[0])).toEqual(['a0', 'a2', 'a4', 'a6', 'a8']);
    expect(s.mostOpen().get(0)).toBe(2);
  });

  it('sends every partition at once, each with its own bound', async () => {
    const { p0, p1 } = idsOfTwoPartitions(4);
    const items = [...p0, ...p1].sort();
    const s = controlledSend();
    const done = mapByPartition(items, 2, (id) => id, s.send, 1, 1);
    await new Promise((resolve) => setImmediate(resolve));
    // One call out in each partition before anything answered.
    expect(s.sent.map((c) => c.partition).sort()).toEqual([0, 1]);
    while (s.open.length > 0) await s.answer();
    expect(await done).toEqual(items.map((id) => `out:${id}`));
    expect(s.mostOpen()).toEqual(
      new Map([
        [0, 1],
        [1, 1],
      ]),
    );
  });

  it('without a bound sends every chunk at once', async () => {
    const ids = Array.from({ length: 6 }, (_, i) => `b${i}`);
    const s = controlledSend();
    const done = mapByPartition(ids, 1, (id) => id, s.send, 2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(s.sent).toHaveLength(3);
    while (s.open.length > 0) await s.answer();
    expect(await done).toEqual(ids.map((id) => `out:${id}`));
  });

  it("tells each call the partition's next chunk: the very array it sends next", async () => {
    const { p0, p1 } = idsOfTwoPartitions(5);
    const calls: Array<{ partition: number; items: string[]; upcoming: string[] | undefined }> = [];
    const send = async (partition: number, items: string[], upcoming: string[] | undefined) => {
      calls.push({ partition, items, upcoming });
      await new Promise((resolve) => setImmediate(resolve));
      return items;
    };
    const items = [...p0, ...p1].sort();
    expect(await mapByPartition(items, 2, (id) => id, send, 2, 2)).toEqual(items);
    for (const partition of [0, 1]) {
      const mine = calls.filter((c) => c.partition === partition);
      expect(mine.flatMap((c) => c.items)).toEqual(items.filter((id) => partitionOf(id, 2) === partition));
      mine.forEach((call, k) => {
        if (k + 1 < mine.length) expect(call.upcoming).toBe(mine[k + 1]!.items);
        else expect(call.upcoming).toBeUndefined();
      });
    }
  });

  it("cuts each partition's items as a chunk-lengths function says, in order", async () => {
    const { p0, p1 } = idsOfTwoPartitions(5);
    const items = [...p0, ...p1].sort();
    const seen: string[][] = [];
    const sent: Array<{ partition: number; items: string[] }> = [];
    const send = async (partition: number, batch: string[]) => {
      sent.push({ partition, items: batch });
      return batch.map((id) => `out:${id}`);
    };
    const lengths = (mine: readonly string[]) => {
      seen.push([...mine]);
      return [1, 3, 1];
    };
    expect(await mapByPartition(items, 2, (id) => id, send, lengths, 1)).toEqual(
      items.map((id) => `out:${id}`),
    );
    // Given each partition's items alone, in their order.
    expect(seen.map((mine) => new Set(mine.map((id) => partitionOf(id, 2))).size)).toEqual([1, 1]);
    expect(seen.flat().sort()).toEqual(items);
    for (const partition of [0, 1]) {
      const mine = sent.filter((c) => c.partition === partition).map((c) => c.items.length);
      expect(mine).toEqual([1, 3, 1]);
    }
  });

  it('refuses chunk lengths that do not add up to the items', async () => {
    const send = async (_p: number, batch: string[]) => batch;
    await expect(
      mapByPartition(
        ['a', 'b', 'c'],
        1,
        (id) => id,
        send,
        () => [1, 1],
      ),
    ).rejects.toThrow(/chunks of 2 items for 3/);
  });

  it('rejects with the error of a failed call', async () => {
    const boom = new Error('boom');
    let calls = 0;
    const send = async (_p: number, items: string[]): Promise<string[]> => {
      if (++calls === 2) throw boom;
      return items;
    };
    await expect(mapByPartition(['c0', 'c1', 'c2', 'c3'], 1, (id) => id, send, 1, 2)).rejects.toBe(boom);
  });
});
