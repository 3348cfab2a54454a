import { afterEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import {
  COUNTER_NAMES,
  RUN_TIME_NAMES,
  zeroCounters,
  flushCounts,
  readSnapshots,
  readTotals,
  RING_SECONDS,
} from '../../src/operations/stats.js';
import { growth } from '../../src/metrics/activity.js';
import { partitionKeys, queueKeys } from '../../src/redis/keys.js';
import { ScriptBadArg } from '../../src/redis/script-errors.js';
import { runScript, script } from '../../src/redis/scripts.js';
import { CounterFlusher, counterFlusherFor } from '../../src/worker/counters.js';
import { inspector, uniqueQueue, useRedis } from '../support/fixtures.js';

const redis = useRedis();
const clients: Redis[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.quit();
});
function client(): Redis {
  const c = inspector(redis.url());
  clients.push(c);
  return c;
}

describe('stats.lua', () => {
  it('adds deltas to the totals and snapshots every total in the current second’s slot', async () => {
    const c = client();
    const keys = queueKeys(uniqueQueue('n'));
    // A total bumped by another script (add.lua) shows in the next snapshot.
    await c.hincrby(keys.counters, 'added', 7);
    const second = await flushCounts(c, keys, { claimed: 3, completed: 2, 'lat:+Inf': 3, 'lat:sum': 12 });
    await flushCounts(c, keys, { completed: 1 });

    const totals = await readTotals(c, keys);
    expect(totals).toMatchObject({
      added: 7,
      claimed: 3,
      completed: 3,
      'lat:+Inf': 3,
      'lat:sum': 12,
      dead: 0,
    });
    const [time] = await c.time();
    const snapshots = await readSnapshots(c, keys, second - 1, Number(time));
    // Both flushes may fall in one second or two; the last snapshot holds the totals after both.
    expect(snapshots.at(-1)).toEqual({ second: snapshots.at(-1)!.second, values: totals });
    // Before the first flush, the second before it gets the totals as they were (the baseline).
    expect(snapshots[0]).toEqual({ second: second - 1, values: { ...zeroCounters(), added: 7 } });
    expect(snapshots[1]!.second).toBe(second);
    // Only the slots of the baseline and the flushed seconds exist besides the totals.
    const fields = await c.hkeys(keys.counters);
    expect(fields.filter((f) => f.startsWith('s:')).length).toBe(snapshots.length);
  });

  it('counts the first flush after an idle spell: its window holds a baseline just before it', async () => {
    const c = client();
    const keys = queueKeys(uniqueQueue('n'));
    const old = await flushCounts(c, keys, { claimed: 1, completed: 1 });
    // An idle spell: the queue's last snapshot is long before the next flush's window.
    const idle = 120;
    for (const field of await c.hkeys(keys.counters)) {
      if (!field.startsWith('s:')) continue;
      const slot = (await c.hgetBuffer(keys.counters, field))!;
      const moved = Buffer.from(slot);
      moved.writeUIntBE(slot.readUIntBE(0, 6) - idle, 0, 6);
      await c.hdel(keys.counters, field);
      await c.hset(keys.counters, `s:${(slot.readUIntBE(0, 6) - idle) % RING_SECONDS}`, moved);
    }
    const second = await flushCounts(c, keys, { claimed: 3, completed: 3 });
    expect(second - old).toBeLessThan(idle - 60);
    // A reader of the last minute (delayq stats' lateness, the charts) sees the 3 of this flush.
    const window = await readSnapshots(c, keys, second - 60, second);
    expect(window.map((s) => s.second)).toEqual([second - 1, second]);
    expect(growth([window])).toMatchObject({ claimed: 3, completed: 3 });
    // A second flush in the same second (or the next) adds no baseline over the first's snapshot.
    const again = await flushCounts(c, keys, { completed: 1 });
    const after = await readSnapshots(c, keys, second - 60, again);
    expect(after[0]).toEqual(window[0]);
    expect(growth([after])).toMatchObject({ claimed: 3, completed: 4 });
  });

  it('leaves out a slot that holds a snapshot of an older lap of the ring', async () => {
    const c = client();
    const keys = queueKeys(uniqueQueue('n'));
    const second = await flushCounts(c, keys, { claimed: 1 });
    const slot = await c.hgetBuffer(keys.counters, `s:${second % RING_SECONDS}`);
    expect(slot).not.toBeNull();
    // The same slot, read for the second one lap later: stale, not shown.
    expect(await readSnapshots(c, keys, second + RING_SECONDS, second + RING_SECONDS)).toEqual([]);
    expect((await readSnapshots(c, keys, second, second)).length).toBe(1);
  });

  it('refuses an unknown counter, a negative delta or a lone name, and writes nothing', async () => {
    const c = client();
    const keys = queueKeys(uniqueQueue('n'));
    const stats = (args: string[]) => runScript(c, script('stats'), [keys.counters], args);
    await expect(stats(['bogus', '1'])).rejects.toThrow(ScriptBadArg);
    await expect(stats(['bogus', '1'])).rejects.toThrow(/unknown counter bogus/);
    await expect(stats(['claimed', '1', 'completed', '-1'])).rejects.toThrow(
      /completed must be a whole number >= 0/,
    );
    await expect(stats(['claimed'])).rejects.toThrow(/pairs of counter name and delta/);
    expect(await c.exists(keys.counters)).toBe(0);
  });

  it('decodes snapshots in the order stats.lua writes them', async () => {
    const c = client();
    const keys = queueKeys(uniqueQueue('n'));
    // A distinct value per counter, so a swapped pair of names in either list fails.
    const deltas = Object.fromEntries(COUNTER_NAMES.map((name, i) => [name, i + 1]));
    const second = await flushCounts(c, keys, deltas);
    const [snapshot] = await readSnapshots(c, keys, second, second);
    // The run-time counters are totals only: a snapshot reads them as 0.
    expect(snapshot?.values).toEqual({ ...zeroCounters(), ...deltas });
  });

  it('keeps the run-time counters as totals, out of the snapshots, under the names stats.ts lists', async () => {
    const c = client();
    const keys = queueKeys(uniqueQueue('n'));
    // A distinct value per name, so a name stats.lua does not know (or spells otherwise) fails.
    const deltas = Object.fromEntries(RUN_TIME_NAMES.map((name, i) => [name, i + 1]));
    const second = await flushCounts(c, keys, { claimed: 1, ...deltas });
    expect(await readTotals(c, keys)).toEqual({ ...zeroCounters(), claimed: 1, ...deltas });
    const [snapshot] = await readSnapshots(c, keys, second, second);
    expect(snapshot?.values).toEqual({ ...zeroCounters(), claimed: 1 });
  });
});

describe('CounterFlusher', () => {
  it('flushes counts and lateness per partition, nothing when idle, and the rest at close', async () => {
    const sent: Array<[number, Record<string, number>]> = [];
    const flusher = new CounterFlusher(
      async (partition, deltas) => {
        sent.push([partition, { ...deltas }]);
      },
      (err) => {
        throw err;
      },
      60_000,
    );
    await flusher.flush();
    expect(sent).toEqual([]);

    flusher.count('claimed', 2);
    flusher.count('completed');
    flusher.lateness(7);
    flusher.lateness(300, 1);
    await flusher.flush();
    expect(sent).toEqual([
      [
        0,
        {
          claimed: 2,
          completed: 1,
          'lat:10': 1,
          'lat:20': 1,
          'lat:50': 1,
          'lat:100': 1,
          'lat:250': 1,
          'lat:500': 1,
          'lat:1000': 1,
          'lat:5000': 1,
          'lat:+Inf': 1,
          'lat:sum': 7,
        },
      ],
      [1, { 'lat:500': 1, 'lat:1000': 1, 'lat:5000': 1, 'lat:+Inf': 1, 'lat:sum': 300 }],
    ]);
    sent.length = 0;
    await flusher.flush();
    expect(sent).toEqual([]);

    flusher.count('completed', 4);
    // A run of 2.4 s and one of 40 ms: cumulative buckets from the first bound each is within.
    flusher.runTime(2_400);
    flusher.runTime(40, 1);
    await flusher.close();
    const upFrom = (le: number) =>
      Object.fromEntries(
        [1, 5, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000]
          .filter((b) => b >= le)
          .map((b) => [`run:${b}`, 1]),
      );
    expect(sent).toEqual([
      [0, { completed: 4, ...upFrom(2500), 'run:+Inf': 1, 'run:sum': 2_400 }],
      [1, { ...upFrom(50), 'run:+Inf': 1, 'run:sum': 40 }],
    ]);
  });

  it('keeps the counts of a failed flush for the next one', async () => {
    let fail = true;
    const sent: Array<Record<string, number>> = [];
    const flusher = new CounterFlusher(
      async (_partition, deltas) => {
        if (fail) throw new Error('redis is away');
        sent.push({ ...deltas });
      },
      () => {},
      60_000,
    );
    flusher.count('completed', 2);
    await expect(flusher.flush()).rejects.toThrow('redis is away');
    flusher.count('completed');
    fail = false;
    await flusher.flush();
    expect(sent).toEqual([{ completed: 3 }]);
  });

  it('counterFlusherFor() sends each partition’s counts to that partition’s counters', async () => {
    const c = client();
    const partitions = partitionKeys(uniqueQueue('n'), 2);
    const flusher = counterFlusherFor(c, partitions, () => {}, 60_000);
    flusher.count('claimed');
    flusher.lateness(0);
    flusher.count('completed', 2, 1);
    await flusher.close();
    expect(await readTotals(c, partitions[0]!)).toMatchObject({
      claimed: 1,
      completed: 0,
      'lat:1': 1,
      'lat:+Inf': 1,
      'lat:sum': 0,
    });
    expect(await readTotals(c, partitions[1]!)).toMatchObject({ claimed: 0, completed: 2, 'lat:+Inf': 0 });
  });
});
