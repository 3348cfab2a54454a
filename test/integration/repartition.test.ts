// Re-partitioning a live queue (issue 34): queue.repartition(4) on a queue of 2 partitions while a
// producer adds and workers run, with jobs waiting, running and dead at the change. Every accepted
// job runs once, none early, none lost; ids the caller chose keep deduplicating; workers and
// producers opened with the old count follow the recorded one. The refusals (shrink, groups,
// paused, schedules) write nothing. Lateness during the change is printed, not asserted.
import { describe, expect, it } from 'vitest';
import { PartitionMismatchError, Queue, RepartitionRefusedError, Worker, type Job } from '../../src/index.js';
import { configKey, partitionKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();

interface Kind {
  kind: 'plain' | 'slow' | 'die';
}

describe('queue.repartition() on a live queue', () => {
  it('grows 2 -> 4 partitions under load: each job once, none early or lost, old clients follow', async () => {
    const name = uniqueQueue('repart');
    const closers: Array<() => Promise<unknown>> = [];
    const c = inspector(redis.url());
    closers.push(() => c.quit());
    const queue = (partitions: number): Queue<Kind> => {
      const q = new Queue<Kind>(name, { connection: redis.url(), partitions });
      closers.push(() => q.close());
      return q;
    };
    const runs = new Map<string, number>();
    let early = 0;
    let dieAllowed = false;
    const lateness: Array<{ at: number; late: number }> = [];
    const errors: Error[] = [];
    const handler = async (job: Job<Kind>): Promise<void> => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      if (job.claimedAt.getTime() < job.runAt.getTime()) early++;
      lateness.push({ at: job.runAt.getTime(), late: job.claimedAt.getTime() - job.runAt.getTime() });
      if (job.payload.kind === 'slow') await new Promise((resolve) => setTimeout(resolve, 1_500));
      if (job.payload.kind === 'die' && !dieAllowed) throw new Error('dies before the change');
    };
    const worker = (partitions: number): Worker<Kind> => {
      const w = new Worker<Kind>(name, handler, {
        connection: redis.url(),
        partitions,
        concurrency: 20,
        leaseMs: 2_000,
        keepCompleted: { count: 100_000 },
      });
      w.on('error', (err) => errors.push(err));
      closers.push(() => w.close({ timeoutMs: 3_000 }));
      return w;
    };
    try {
      const q2 = queue(2);
      const w2 = worker(2);
      await w2.waitUntilReady();
      // Dead before the change, and running across it.
      await q2.addBulk(
        Array.from({ length: 3 }, (_, i) => ({
          payload: { kind: 'die' as const },
          opts: { id: `die-${i}`, attempts: 1 },
        })),
      );
      await waitFor(async () => (await q2.counts()).dead === 3, { what: 'three dead jobs' });
      await q2.addBulk(Array.from({ length: 5 }, () => ({ payload: { kind: 'slow' as const } })));
      // Waiting across it: chosen ids and generated ones, due over the next 3 s.
      const accepted = new Set<string>();
      const add = async (q: Queue<Kind>, ids: Array<string | undefined>, delay: (i: number) => number) => {
        const out = await q.addBulk(
          ids.map((id, i) => ({
            payload: { kind: 'plain' as const },
            opts: { ...(id && { id }), delay: delay(i) },
          })),
        );
        for (const r of out) if (r.created) accepted.add(r.id);
        return out;
      };
      await add(
        q2,
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? `e-${i}` : undefined)),
        (i) => (i * 3_000) / 200,
      );
      await waitFor(async () => (await q2.counts()).active >= 5, { what: 'the slow jobs running' });

      // A producer adding while the count changes.
      let producing = true;
      let n = 0;
      const producer = (async () => {
        while (producing) {
          await add(
            q2,
            Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? `p-${n++}` : undefined)),
            (i) => i * 50,
          );
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const changedAt = Date.now();
      const status = await queue(2).repartition(4);
      expect(status.partitions).toBe(4);
      expect(status.base).toBe(2);
      expect(await c.hmget(configKey(name), 'partitions', 'partitions.base')).toEqual(['4', '2']);
      // Opened with the old count after the change: adopt the recorded one.
      const late = worker(2);
      await late.waitUntilReady();
      const q4 = queue(4);
      const qOld = queue(2);
      await add(
        q4,
        Array.from({ length: 100 }, () => undefined),
        (i) => (i * 1_000) / 100,
      );
      await add(
        qOld,
        Array.from({ length: 20 }, (_, i) => `o-${i}`),
        () => 100,
      );
      // Chosen ids added again from either count: the existing job is found, not a second one.
      const again = await q4.addBulk(
        Array.from({ length: 50 }, (_, i) => ({
          payload: { kind: 'plain' as const },
          opts: { id: `e-${2 * i}`, delay: 10 },
        })),
      );
      expect(again.filter((r) => r.created)).toEqual([]);
      const againOld = await qOld.addBulk(
        Array.from({ length: 20 }, (_, i) => ({
          payload: { kind: 'plain' as const },
          opts: { id: `o-${i}` },
        })),
      );
      expect(againOld.filter((r) => r.created)).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      producing = false;
      await producer;
      // The producer opened with 2 now places generated ids in all 4 partitions.
      const keys = partitionKeys(name, 4);
      await waitFor(
        async () => (await Promise.all([2, 3].map((p) => c.zcard(keys[p]!.completed)))).every((k) => k > 0),
        { what: 'jobs completed from the new partitions' },
      );
      // The dead stay dead, and are retried where they are.
      expect((await q4.counts()).dead).toBe(3);
      dieAllowed = true;
      expect(await q4.dead.retryAll()).toBe(3);

      await waitFor(() => [...accepted].every((id) => runs.has(id)), {
        timeoutMs: 20_000,
        what: 'every accepted job to run',
      });
      await waitFor(async () => (await q4.counts()).active === 0 && (await q4.counts()).dead === 0, {
        timeoutMs: 10_000,
        what: 'the last acks',
      });
      // Past one lease: a fate sent to the wrong partition would show as a second run by now.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const counts = await q4.counts();
      const twice = [...runs].filter(([id, k]) => k > (id.startsWith('die-') ? 2 : 1));
      const lost = [...accepted].filter((id) => !runs.has(id));
      const completed = (await Promise.all(keys.map((k) => c.zcard(k.completed)))).reduce((a, b) => a + b, 0);
      const window = lateness
        .filter((l) => l.at >= changedAt - 500 && l.at <= changedAt + 2_000)
        .map((l) => l.late);
      window.sort((a, b) => a - b);
      console.log(
        `repartition 2 -> 4 under load: jobs ${accepted.size + 8} (accepted ${accepted.size}, slow 5, dead 3), lost ${lost.length}, twice ${twice.length}, early ${early}; lateness of the ${window.length} jobs due in [change - 0.5 s, change + 2 s]: p50 ${window[Math.floor(window.length / 2)] ?? 0} ms, max ${window[window.length - 1] ?? 0} ms`,
      );
      expect(lost).toEqual([]);
      expect(twice).toEqual([]);
      expect(early).toBe(0);
      expect(errors).toEqual([]);
      expect(counts.active + counts.scheduled + counts.due + counts.dead).toBe(0);
      expect(completed).toBe(accepted.size + 8);
      const after = await q4.repartitionStatus();
      expect(after.following).toBe(true);
      expect(after.perPartition.map((p) => p.workers)).toEqual([2, 2, 2, 2]);
    } finally {
      for (const close of closers.reverse()) await close();
    }
  });

  it('grows an unpartitioned queue to 3: its own keys stay partition 0, clients of either count agree', async () => {
    const name = uniqueQueue('grow1');
    const c = inspector(redis.url());
    const one = new Queue<string>(name, { connection: redis.url() });
    const three = new Queue<string>(name, { connection: redis.url(), partitions: 3 });
    const runs = new Map<string, number>();
    let early = 0;
    const w = new Worker<string>(
      name,
      async (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        if (job.claimedAt.getTime() < job.runAt.getTime()) early++;
      },
      { connection: redis.url(), keepCompleted: { count: 1_000 } },
    );
    try {
      await w.waitUntilReady();
      const before = await one.addBulk(
        Array.from({ length: 40 }, (_, i) => ({ payload: 'x', opts: { id: `k-${i}`, delay: 300 + i * 10 } })),
      );
      await expect(three.add('x')).rejects.toThrow(PartitionMismatchError);
      expect((await one.repartition(3)).perPartition.map((p) => p.waiting)).toEqual([40, 0, 0]);
      // Opened with 3 (before the record said so it was refused): partition 0 is the queue's own keys.
      const fresh = new Queue<string>(name, { connection: redis.url(), partitions: 3 });
      const added = await fresh.addBulk(
        Array.from({ length: 60 }, () => ({ payload: 'y', opts: { delay: 100 } })),
      );
      expect((await fresh.get('k-0'))?.state).toBe('scheduled');
      expect((await fresh.add('x', { id: 'k-1' })).created).toBe(false);
      const keys = partitionKeys(name, 3, 1);
      expect(keys[0]!.waiting).toBe(`dq:{${name}}:s`);
      const spread = await Promise.all(keys.map((k) => c.zcard(k.waiting)));
      expect(spread.every((n) => n > 0)).toBe(true);
      await fresh.close();
      const all = [...before, ...added].map((r) => r.id);
      await waitFor(() => all.every((id) => runs.has(id)), { timeoutMs: 10_000, what: 'every job to run' });
      await waitFor(async () => (await one.counts()).active === 0, { what: 'the last acks' });
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
      expect(early).toBe(0);
      expect(await one.counts()).toMatchObject({ scheduled: 0, due: 0, active: 0, completed: 100 });
    } finally {
      await w.close();
      await one.close();
      await three.close();
      await c.quit();
    }
  });

  it('refuses shrinking, groups, a paused queue and bad counts, writing nothing; the same count is no change', async () => {
    const name = uniqueQueue('refuse');
    const q = new Queue(name, { connection: redis.url(), partitions: 2 });
    const c = inspector(redis.url());
    try {
      await q.add({}, { id: 'a', delay: '1h' });
      const before = await c.hgetall(configKey(name));
      await expect(q.repartition(1)).rejects.toThrow(RepartitionRefusedError);
      await expect(q.repartition(1)).rejects.toThrow(/shrinking is not supported/);
      await expect(q.repartition(0)).rejects.toThrow(/whole number of partitions 1\.\.1024/);
      await expect(q.repartition(2.5)).rejects.toThrow(/whole number/);
      expect((await q.repartition(2)).partitions).toBe(2);
      await q.pause();
      await expect(q.repartition(4)).rejects.toThrow(/paused: resume it first/);
      await q.resume();
      await q.add({}, { group: 'g', delay: '1h' });
      await expect(q.repartition(4)).rejects.toThrow(/groups/);
      expect(await c.hgetall(configKey(name))).toEqual(before);
      // A client whose count is neither recorded nor between the base and the record still fails.
      const wrong = new Queue(name, { connection: redis.url(), partitions: 3 });
      await expect(wrong.add({})).rejects.toThrow(PartitionMismatchError);
      await wrong.close();
    } finally {
      await q.close();
      await c.quit();
    }
  });
});
