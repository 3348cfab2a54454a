/**
 * Groups (issue 16) in one process against a real redis-server: the per-group bound, turns, the
 * slot freed on every path that ends a lease, the rate limit, and the refusals.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, ValidationError, Worker, type Job } from '../../src/index.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { groupState } from './group-state.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

function open<T>(name: string): Queue<T> {
  const queue = new Queue<T>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  return queue;
}

function work<T>(
  name: string,
  handler: (job: Job<T>) => Promise<unknown>,
  options: ConstructorParameters<typeof Worker<T>>[2] = {},
): Worker<T> {
  const worker = new Worker<T>(name, handler, { connection: redis.url(), maxSleepMs: 200, ...options });
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  return worker;
}

/** Counts the running jobs of each group as the handlers see them, and the most ever seen. */
function runningTracker(): { enter(g: string): void; leave(g: string): void; most: Map<string, number> } {
  const now = new Map<string, number>();
  const most = new Map<string, number>();
  return {
    enter(g) {
      const n = (now.get(g) ?? 0) + 1;
      now.set(g, n);
      most.set(g, Math.max(most.get(g) ?? 0, n));
    },
    leave(g) {
      now.set(g, (now.get(g) ?? 0) - 1);
    },
    most,
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('groups', () => {
  it('runs at most groups.concurrency jobs of a group at once, and every job once', async () => {
    const name = uniqueQueue('grp');
    const queue = open<number>(name);
    await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ payload: i, opts: { group: `t${i % 3}` } })));
    const tracker = runningTracker();
    const seen: number[] = [];
    work<number>(
      name,
      async (job) => {
        tracker.enter(job.group!);
        await sleep(5);
        seen.push(job.payload);
        tracker.leave(job.group!);
      },
      { concurrency: 10, groups: { concurrency: 2 } },
    );
    await waitFor(() => seen.length === 60, { what: '60 jobs' });
    expect([...tracker.most.values()].every((n) => n <= 2)).toBe(true);
    // The bound was reached: it is a bound, not a queue of one.
    expect(Math.max(...tracker.most.values())).toBe(2);
    expect(new Set(seen).size).toBe(60);
    await waitFor(async () => (await groupState(queue)).empty, { what: 'group keys empty' });
  });

  it('keeps a group’s jobs in due order at concurrency 1', async () => {
    const name = uniqueQueue('grp');
    const queue = open<number>(name);
    const base = Date.UTC(2021, 0, 1);
    // Added out of order; due order is the payload order.
    await queue.addBulk(
      [5, 1, 4, 0, 3, 2].map((i) => ({ payload: i, opts: { group: 'g', runAt: base + i } })),
    );
    const seen: number[] = [];
    work<number>(name, async (job) => void seen.push(job.payload), {
      concurrency: 4,
      groups: { concurrency: 1 },
    });
    await waitFor(() => seen.length === 6, { what: '6 jobs' });
    expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('does not let a busy group hold back another group or ungrouped jobs', async () => {
    const name = uniqueQueue('grp');
    const queue = open<string>(name);
    await queue.addBulk(
      Array.from({ length: 200 }, (_, i) => ({ payload: `big${i}`, opts: { group: 'big' } })),
    );
    await queue.add('small', { group: 'small' });
    await queue.add('plain');
    const order: string[] = [];
    work<string>(name, async (job) => void order.push(job.payload), {
      concurrency: 1,
      groups: { concurrency: 1 },
    });
    await waitFor(() => order.length === 202, { what: 'all jobs' });
    // Turns: the one-job group and the ungrouped job start within the first few, not after 200.
    expect(order.indexOf('small')).toBeLessThan(4);
    expect(order.indexOf('plain')).toBeLessThan(4);
  });

  it('starts a full group’s next job with the ack that frees its slot: one script call per job', async () => {
    const name = uniqueQueue('grp');
    const queue = open<number>(name);
    const jobs = 100;
    await queue.addBulk(Array.from({ length: jobs }, (_, i) => ({ payload: i, opts: { group: 'one' } })));
    const control = new Redis(redis.url());
    closers.push(async () => void (await control.quit()));
    const scriptCalls = async (): Promise<number> => {
      let n = 0;
      const stats = await control.info('commandstats');
      for (const m of stats.matchAll(/^cmdstat_(fcall|evalsha|eval):calls=(\d+)/gm)) n += Number(m[2]);
      return n;
    };
    const before = await scriptCalls();
    let done = 0;
    // Free slots to spare, so the claim loop sleeps with the group full after every claim: the
    // ack has to wake it. Without that, each job took an ack-only call and a claim.
    work<number>(name, async () => void done++, { concurrency: 10, groups: { concurrency: 1 } });
    await waitFor(() => done === jobs, { what: `${jobs} jobs` });
    const calls = (await scriptCalls()) - before;
    // One claim per job (each acks the one before) and one more, plus the worker's start-up calls
    // (config, register, trim) and a counters flush or two.
    expect(calls).toBeGreaterThanOrEqual(jobs);
    expect(calls).toBeLessThan(jobs * 1.2);
  });

  it('frees the slot on fail (retry and dead), release, cancel and ack', async () => {
    const name = uniqueQueue('grp');
    const queue = open<string>(name);
    const attempts = new Map<string, number>();
    let cancelStarted = false;
    work<string>(
      name,
      async (job) => {
        attempts.set(job.payload, job.attempt);
        if (job.payload === 'fail-once' && job.attempt === 1) throw new Error('once');
        if (job.payload === 'dead') throw new Error('always');
        if (job.payload === 'cancel-me') {
          cancelStarted = true;
          await new Promise((_, reject) =>
            job.signal.addEventListener('abort', () => reject(new Error('aborted'))),
          );
        }
        return undefined;
      },
      { concurrency: 1, groups: { concurrency: 1 }, backoff: { type: 'fixed', delay: 10 } },
    );
    await queue.add('fail-once', { group: 'a', id: 'f1' });
    await queue.add('dead', { group: 'a', id: 'd1', attempts: 1 });
    await queue.add('cancel-me', { group: 'a', id: 'c1' });
    await waitFor(() => cancelStarted, { what: 'cancel-me running' });
    expect(await queue.cancel('c1')).toBe(true);
    await queue.add('after', { group: 'a', id: 'a1' });
    await waitFor(() => attempts.has('after'), { what: 'the job after the cancelled one' });
    expect(attempts.get('fail-once')).toBe(2);
    expect((await queue.get('d1'))?.state).toBe('dead');
    await waitFor(async () => (await groupState(queue)).empty, { what: 'group keys empty' });
  });

  it('holds a group to its rate limit (token bucket: max at once, then max per `per`)', async () => {
    const name = uniqueQueue('grp');
    const queue = open<number>(name);
    const starts: number[] = [];
    const other: number[] = [];
    const limit = { max: 2, per: 300 };
    work<number>(
      name,
      async (job) => {
        (job.group === 'slow' ? starts : other).push(job.claimedAt.getTime());
      },
      { concurrency: 4, groups: { concurrency: 4, limit } },
    );
    await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ payload: i, opts: { group: 'slow' } })));
    await queue.addBulk(Array.from({ length: 2 }, (_, i) => ({ payload: i, opts: { group: 'fast' } })));
    await waitFor(() => starts.length === 6 && other.length === 2, { timeoutMs: 15_000, what: '8 jobs' });
    starts.sort((a, b) => a - b);
    // A bucket of `max` refilled at max per `per` ms: j - i + 1 starts within [t_i, t_j] need
    // (j - i + 1 - max) tokens of refill, which take that many per/max ms (1 ms of rounding each).
    for (let i = 0; i < starts.length; i++) {
      for (let j = i + limit.max; j < starts.length; j++) {
        const refill = j - i + 1 - limit.max;
        expect(starts[j]! - starts[i]!).toBeGreaterThanOrEqual((refill * limit.per) / limit.max - 1);
      }
    }
  });

  it('get, list and counts see grouped jobs waiting in their group', async () => {
    const name = uniqueQueue('grp');
    const queue = open<string>(name);
    const { id, runAt } = await queue.add('later', { group: 'tenant-7', delay: '1h' });
    await queue.add('plain', { delay: '2h' });
    const info = await queue.get(id);
    expect(info).toMatchObject({ state: 'scheduled', group: 'tenant-7', payload: 'later' });
    expect(info?.runAt).toEqual(runAt);
    const listed = await queue.list('scheduled');
    expect(listed.map((j) => j.payload)).toEqual(['plain', 'later']);
    expect(await queue.counts()).toMatchObject({ scheduled: 2, due: 0 });
    expect(await queue.reschedule(id, { delay: 0 })).toBe(true);
    expect(await queue.counts()).toMatchObject({ scheduled: 2, due: 1 });
    expect(await queue.cancel(id)).toBe(true);
    expect((await groupState(queue)).empty).toBe(true);
  });

  it('refuses bad group names, a group with a priority, and bad group options, naming them', async () => {
    const name = uniqueQueue('grp');
    const queue = open<number>(name);
    await expect(queue.add(1, { group: '' })).rejects.toMatchObject({ issues: [{ path: 'group' }] });
    await expect(queue.add(1, { group: 'a\nb' })).rejects.toBeInstanceOf(ValidationError);
    await expect(queue.add(1, { group: 'x'.repeat(256) })).rejects.toThrow(/255 bytes/);
    await expect(queue.add(1, { group: 'a', priority: 1 })).rejects.toMatchObject({
      issues: [{ path: 'priority' }],
    });
    for (const [groups, field] of [
      [{ concurrency: 0 }, 'groups.concurrency'],
      [{ concurrency: 1.5 }, 'groups.concurrency'],
      [{ limit: { max: 0, per: 10 } }, 'groups.limit.max'],
      [{ limit: { max: 1, per: 0 } }, 'groups.limit.per'],
    ] as const) {
      expect(
        () => new Worker(name, async () => {}, { connection: redis.url(), autorun: false, groups }),
      ).toThrow(expect.objectContaining({ issues: [expect.objectContaining({ path: field })] }));
    }
    expect(
      () =>
        new Worker(name, async () => {}, {
          connection: redis.url(),
          autorun: false,
          strategy: 'wheel',
          groups: {},
        }),
    ).toThrow(expect.objectContaining({ issues: [expect.objectContaining({ path: 'groups' })] }));
    const wheel = new Queue<number>(uniqueQueue('wheel'), { connection: redis.url(), strategy: 'wheel' });
    closers.push(() => wheel.close());
    await expect(wheel.add(1, { group: 'a' })).rejects.toMatchObject({ issues: [{ path: 'group' }] });
  });

  it('records the group bounds with the first worker that sets them; another value adopts them (live settings)', async () => {
    const name = uniqueQueue('grp');
    const first = work(name, async () => {}, { groups: { concurrency: 3 } });
    await first.waitUntilReady();
    const warnings: string[] = [];
    const second = new Worker(name, async () => {}, {
      connection: redis.url(),
      autorun: false,
      groups: { concurrency: 2 },
      logger: { warn: (m: string) => void warnings.push(m), error: () => {} },
    });
    closers.push(() => second.close());
    // Not a ConfigMismatchError: the bound is a live setting, changed with queue.configure().
    await second.run();
    expect(warnings.join('\n')).toMatch(/groups\.concurrency: 3.*queue\.configure/);
    // A worker that sets nothing adopts the recorded bound.
    const third = work(name, async () => {}, {});
    await third.waitUntilReady();
    const client = inspector(redis.url());
    try {
      expect(await client.hget(`dq:{${name}}:config`, 'groups.concurrency')).toBe('3');
    } finally {
      client.disconnect();
    }
  });
});
