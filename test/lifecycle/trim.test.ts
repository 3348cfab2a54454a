/**
 * trim.lua and the Reaper's trim duty. Completed, cancelled and dead jobs are kept within their
 * count and age, oldest first, at most `maxPerCall` per set and call; a record is deleted with its
 * entry only while it is still the finished record; worker entries older than their age go.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { trim, trimAll, type TrimOutput } from '../../src/operations/trim.js';
import { partitionKeys, queueKeys } from '../../src/redis/keys.js';
import { Reaper } from '../../src/worker/reaper.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { CANCELLED, COMPLETED, record } from './seed.js';

const redis = useRedis();
let c: Redis;
beforeAll(() => {
  c = inspector(redis.url());
});
afterAll(async () => {
  await c.quit();
});

const NONE = { count: 0, ageMs: 0 };

describe('trim', () => {
  it('keeps completed jobs within their count, oldest first, deleting their records', async () => {
    const keys = queueKeys(uniqueQueue('trim-c'));
    for (let i = 1; i <= 5; i++) {
      await c.zadd(keys.completed, i, `c${i}`);
      await c.hset(keys.records, `c${i}`, COMPLETED);
    }
    const out = await trim(c, keys, { completed: { count: 2, ageMs: 0 }, cancelled: NONE, dead: NONE });
    expect(out).toEqual({ completed: 3, cancelled: 0, dead: 0, workers: 0, logs: 0 });
    expect(await c.zrange(keys.completed, 0, -1)).toEqual(['c4', 'c5']);
    expect((await c.hkeys(keys.records)).sort()).toEqual(['c4', 'c5']);
  });

  it('drops cancelled jobs older than their age, and no more than maxPerCall per call', async () => {
    const keys = queueKeys(uniqueQueue('trim-x'));
    const now = await serverNow(c);
    await c.zadd(keys.cancelled, now - 9_000, 'x1', now - 8_000, 'x2', now - 7_000, 'x3', now, 'fresh');
    await c.hset(keys.records, 'x1', CANCELLED, 'x2', CANCELLED, 'x3', CANCELLED, 'fresh', CANCELLED);
    const first = await trim(c, keys, {
      completed: NONE,
      cancelled: { count: 0, ageMs: 5_000 },
      dead: NONE,
      maxPerCall: 2,
    });
    expect(first.cancelled).toBe(2);
    expect(await c.zrange(keys.cancelled, 0, -1)).toEqual(['x3', 'fresh']);
    const second = await trim(c, keys, {
      completed: NONE,
      cancelled: { count: 0, ageMs: 5_000 },
      dead: NONE,
    });
    expect(second.cancelled).toBe(1);
    expect(await c.zrange(keys.cancelled, 0, -1)).toEqual(['fresh']);
    expect(await c.hkeys(keys.records)).toEqual(['fresh']);
  });

  it('keeps the record of an id added again since it completed', async () => {
    const keys = queueKeys(uniqueQueue('trim-readd'));
    await c.zadd(keys.completed, 1, 'again');
    await c.hset(keys.records, 'again', record({}));
    await trim(c, keys, { completed: { count: 0, ageMs: 1_000 }, cancelled: NONE, dead: NONE });
    expect(await c.exists(keys.completed)).toBe(0);
    expect(await c.hgetBuffer(keys.records, 'again')).toEqual(record({}));
  });

  it('trims dead jobs by count with their errors', async () => {
    const keys = queueKeys(uniqueQueue('trim-d'));
    await c.zadd(keys.dead, 1, 'd1', 2, 'd2');
    await c.hset(keys.records, 'd1', record({}), 'd2', record({}));
    await c.hset(keys.errors, 'd1', '{}', 'd2', '{}');
    const out = await trim(c, keys, { completed: NONE, cancelled: NONE, dead: { count: 1, ageMs: 0 } });
    expect(out).toEqual({ completed: 0, cancelled: 0, dead: 1, workers: 0, logs: 0 });
    expect(await c.zrange(keys.dead, 0, -1)).toEqual(['d2']);
    expect(await c.hkeys(keys.records)).toEqual(['d2']);
    expect(await c.hkeys(keys.errors)).toEqual(['d2']);
  });

  it('forgets a worker entry only when neither its start nor its last trim is within the age', async () => {
    const keys = queueKeys(uniqueQueue('trim-wk'));
    const now = await serverNow(c);
    const old = now - 90_000;
    await c.hset(keys.holders, '#', '6');
    await c.hset(keys.holders, '1', `crashed|${old}`, '2', `a|b|${now - 10}`, '3', `alive|${old}`);
    await c.hset(keys.holders, '3@', String(now - 5), '4', `caller|${old}`, '5@', String(now));
    const out = await trim(c, keys, {
      completed: NONE,
      cancelled: NONE,
      dead: NONE,
      workerMaxAgeMs: 60_000,
      holder: 4,
    });
    // 1 crashed long ago; 2 started recently; 3 trimmed recently; 4 is the caller, marked alive
    // now; 5 closed (dropped its entry) and its mark goes too.
    expect(out.workers).toBe(1);
    expect((await c.hkeys(keys.holders)).sort()).toEqual(['#', '2', '3', '3@', '4', '4@']);
    expect(Number(await c.hget(keys.holders, '4@'))).toBeGreaterThanOrEqual(now);
    expect(await c.hget(keys.holders, '4')).toBe(`caller|${old}`);
  });
});

describe('trimAll', () => {
  it('trims every partition and sums what each dropped', async () => {
    const parts = partitionKeys(uniqueQueue('trim-p'), 3);
    for (const [i, keys] of parts.entries()) {
      for (let n = 0; n <= i; n++) {
        await c.zadd(keys.cancelled, n + 1, `x${n}`);
        await c.hset(keys.records, `x${n}`, CANCELLED);
      }
    }
    const out = await trimAll(c, parts, { completed: NONE, cancelled: { count: 1, ageMs: 0 }, dead: NONE });
    expect(out).toEqual({ completed: 0, cancelled: 0 + 1 + 2, dead: 0, workers: 0, logs: 0 });
    for (const keys of parts) expect(await c.zcard(keys.cancelled)).toBe(1);
  });
});

describe('Reaper', () => {
  it('runs the trim it is given on its own interval, whether or not the worker is busy', async () => {
    const keys = queueKeys(uniqueQueue('reaper'));
    await c.zadd(keys.completed, 1, 'old');
    await c.hset(keys.records, 'old', COMPLETED);
    let trims = 0;
    const reaper = new Reaper(
      60_000,
      () => Promise.reject(new Error('the reap must not run: the worker is not busy')),
      () => false,
      (err) => {
        throw err;
      },
      async (): Promise<TrimOutput> => {
        trims++;
        return trim(c, keys, { completed: { count: 0, ageMs: 1_000 }, cancelled: NONE, dead: NONE });
      },
      20,
    );
    reaper.start();
    try {
      await waitFor(async () => trims >= 2 && (await c.exists(keys.completed)) === 0, { what: 'two trims' });
    } finally {
      await reaper.stop();
    }
    expect(await c.exists(keys.records)).toBe(0);
  });

  it('trims only while there is something to trim, then waits for the slow sweep', async () => {
    const EMPTY: TrimOutput = { completed: 0, cancelled: 0, dead: 0, workers: 0, logs: 0 };
    let removes = 1; // the first trim removes one entry, every later one nothing
    let trims = 0;
    let clock = 0;
    const reaper = new Reaper(
      60_000,
      () => Promise.reject(new Error('the reap must not run: the worker is not busy')),
      () => false,
      (err) => {
        throw err;
      },
      async (): Promise<TrimOutput> => {
        trims++;
        const out = { ...EMPTY, completed: removes };
        removes = 0;
        return out;
      },
      5,
      1_000,
      () => clock,
    );
    const ticks = (n: number): Promise<void> => new Promise((r) => setTimeout(r, 5 * n + 50));
    reaper.start();
    try {
      // Once at start; again because that one removed something; then quiet.
      await waitFor(() => trims >= 2, { what: 'the first trims' });
      await ticks(10);
      expect(trims).toBe(2);
      reaper.finished();
      await waitFor(() => trims >= 3, { what: 'a trim after a finished job' });
      await ticks(10);
      expect(trims).toBe(3);
      clock += 1_000;
      await waitFor(() => trims >= 4, { what: 'the sweep' });
      await ticks(10);
      expect(trims).toBe(4);
    } finally {
      await reaper.stop();
    }
  });
});
