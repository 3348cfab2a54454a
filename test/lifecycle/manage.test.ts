/**
 * pause / resume, reschedule, dead-retry and dead-remove on layout 2. Pause writes z and says P;
 * resume deletes it and names the earliest waiting due time in `R <head>`. Reschedule moves a
 * waiting job inside its own class. dead.retry puts a dead job back due now with its attempts reset
 * and its claim count kept; dead.remove deletes only a dead job.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { deadRemove } from '../../src/operations/dead-remove.js';
import { deadRetry } from '../../src/operations/dead-retry.js';
import { reschedule } from '../../src/operations/reschedule.js';
import { isPaused, pause } from '../../src/operations/pause.js';
import { resume } from '../../src/operations/resume.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { queueKeys, type QueueKeys } from '../../src/redis/keys.js';
import { ScriptBadArg } from '../../src/redis/script-errors.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import {
  COMPLETED,
  events,
  expectWithin,
  memberOf,
  nonEmptyKeys,
  readyScore,
  record,
  storedRecord,
} from './seed.js';

const redis = useRedis();
let c: Redis;
beforeAll(() => {
  c = inspector(redis.url());
});
afterAll(async () => {
  await c.quit();
});

const ALL_EVENTS = 10_000;
const FAILURES_ONLY = -10_000;

/** The wake messages published while `act` runs. */
async function heardDuring(keys: QueueKeys, count: number, act: () => Promise<void>): Promise<string[]> {
  const sub = new Redis(redis.url());
  const heard: string[] = [];
  sub.on('message', (_channel: string, message: string) => heard.push(message));
  await sub.subscribe(keys.wake);
  try {
    await act();
    await waitFor(() => heard.length >= count, { what: `${count} wake message(s)` });
    return heard;
  } finally {
    sub.disconnect();
  }
}

describe('pause and resume', () => {
  it('pause writes z once (a second pause keeps the first time) and says P; resume says R <earliest due>', async () => {
    const keys = queueKeys(uniqueQueue('pause'));
    await c.zadd(keys.waiting, 1_900_000_000_000, 's1');
    await c.zadd(keys.prioWaiting, 1_800_000_000_000, '4:p1');
    const heard = await heardDuring(keys, 3, async () => {
      expect(await pause(c, [keys])).toBe(true);
      const first = await c.get(keys.paused);
      expect(await pause(c, [keys])).toBe(false);
      expect(await c.get(keys.paused)).toBe(first);
      expect(await isPaused(c, [keys])).toBe(true);
      expect(await resume(c, [keys])).toBe(true);
    });
    expect(heard).toEqual(['P', 'P', 'R 1800000000000']);
    expect(await isPaused(c, [keys])).toBe(false);
    expect(await resume(c, [keys])).toBe(false);
  });

  it('resume names now when a due prioritized job waits in r, and -1 when nothing waits', async () => {
    const keys = queueKeys(uniqueQueue('resume'));
    const empty = await heardDuring(keys, 1, async () => void (await resume(c, [keys])));
    expect(empty).toEqual(['R -1']);
    await c.zadd(keys.prioReady, readyScore(1, 1_767_225_600_000), '1:a');
    const before = await serverNow(c);
    const heard = await heardDuring(keys, 1, async () => void (await resume(c, [keys])));
    expectWithin(Number(heard[0]?.slice(2)), before, await serverNow(c));
  });
});

describe('reschedule', () => {
  it('moves a waiting job to its new due time in s, and writes the rescheduled event with events all', async () => {
    const keys = queueKeys(uniqueQueue('resched'));
    await c.hset(keys.records, 'a', record({}));
    await c.zadd(keys.waiting, 1_900_000_000_000, 'a');
    const at = await reschedule(c, keys, {
      id: 'a',
      when: { at: 1_950_000_000_000 },
      eventsCap: ALL_EVENTS,
      layout: ZSET_LAYOUT,
    });
    expect(at).toBe(1_950_000_000_000);
    expect(await c.zrange(keys.waiting, 0, -1, 'WITHSCORES')).toEqual(['a', '1950000000000']);
    expect(await storedRecord(c, keys, 'a')).toEqual(record({}));
    expect(await events(c, keys)).toEqual([{ type: 'rescheduled', id: 'a' }]);
  });

  it('moves a prioritized job from p to r when its new time is already due', async () => {
    const keys = queueKeys(uniqueQueue('resched-prio'));
    await c.hset(keys.records, 'b', record({ prio: 7 }));
    await c.zadd(keys.prioWaiting, 1_900_000_000_000, '7:b');
    const now = await serverNow(c);
    const at = await reschedule(c, keys, {
      id: 'b',
      when: { at: now - 1_000 },
      eventsCap: FAILURES_ONLY,
      layout: ZSET_LAYOUT,
    });
    expect(at).toBe(now - 1_000);
    expect(await c.exists(keys.prioWaiting)).toBe(0);
    expect(await c.zrange(keys.prioReady, 0, -1, 'WITHSCORES')).toEqual([
      '7:b',
      String(readyScore(7, now - 1_000)),
    ]);
  });

  it('answers null for a running, dead, completed or unknown job and writes nothing', async () => {
    const keys = queueKeys(uniqueQueue('resched-none'));
    const claim = {
      attempts: 1,
      claims: 1,
      claimedAt: 1_767_225_600_000,
      runDue: 1_767_225_600_000,
      holder: 1,
    };
    await c.hset(keys.records, 'run', record({ claim }), 'dead', record({ claim }), 'done', COMPLETED);
    await c.zadd(keys.leases, 1_900_000_000_000, memberOf('run', claim));
    await c.zadd(keys.dead, 1_767_225_600_000, 'dead');
    const state = await nonEmptyKeys(c, keys);
    for (const id of ['run', 'dead', 'done', 'none']) {
      expect(
        await reschedule(c, keys, { id, when: { delay: 10 }, eventsCap: FAILURES_ONLY, layout: ZSET_LAYOUT }),
      ).toBeNull();
    }
    expect(await nonEmptyKeys(c, keys)).toEqual(state);
  });

  it('refuses a due time in epoch seconds by name', async () => {
    const keys = queueKeys(uniqueQueue('resched-arg'));
    await c.hset(keys.records, 'a', record({}));
    await c.zadd(keys.waiting, 1_900_000_000_000, 'a');
    await expect(
      reschedule(c, keys, {
        id: 'a',
        when: { at: 1_767_225_600 },
        eventsCap: FAILURES_ONLY,
        layout: ZSET_LAYOUT,
      }),
    ).rejects.toThrow(ScriptBadArg);
    expect(await c.zrange(keys.waiting, 0, -1, 'WITHSCORES')).toEqual(['a', '1900000000000']);
  });
});

describe('dead.retry and dead.remove', () => {
  const claim = {
    attempts: 3,
    claims: 4,
    claimedAt: 1_767_225_600_123,
    runDue: 1_767_225_600_000,
    holder: 7,
  };

  it('retry puts a dead job back due now: attempts 0, claims kept, E and its error kept', async () => {
    const keys = queueKeys(uniqueQueue('dead-retry'));
    await c.hset(keys.records, 'd1', record({ claim, hasError: true, prio: 2 }));
    await c.hset(keys.errors, 'd1', '{"name":"Error"}');
    await c.zadd(keys.dead, 1_767_225_601_000, 'd1');
    const before = await serverNow(c);
    expect(await deadRetry(c, keys, { id: 'd1', batch: 1, eventsCap: ALL_EVENTS, layout: ZSET_LAYOUT })).toBe(
      1,
    );
    const after = await serverNow(c);
    expect(await c.exists(keys.dead)).toBe(0);
    expect(await storedRecord(c, keys, 'd1')).toEqual(
      record({ claim: { ...claim, attempts: 0 }, hasError: true, prio: 2 }),
    );
    const [member, score] = await c.zrange(keys.prioReady, 0, -1, 'WITHSCORES');
    expect(member).toBe('2:d1');
    expectWithin(Number(score), readyScore(2, before), readyScore(2, after));
    expect(await c.hget(keys.errors, 'd1')).toBe('{"name":"Error"}');
    expect(await events(c, keys)).toEqual([{ type: 'retried', id: 'd1' }]);
    expect(await c.hgetall(keys.counters)).toEqual({ retried: '1' });
    // Not dead any more: a second retry moves nothing.
    expect(await deadRetry(c, keys, { id: 'd1', batch: 1, eventsCap: ALL_EVENTS, layout: ZSET_LAYOUT })).toBe(
      0,
    );
  });

  it('retry of the oldest batch moves readable jobs and leaves an unreadable record dead', async () => {
    const keys = queueKeys(uniqueQueue('dead-batch'));
    await c.hset(
      keys.records,
      'a',
      record({ claim }),
      'b',
      record({ claim }),
      'bad',
      Buffer.from([0x09, 0x00]),
    );
    await c.zadd(keys.dead, 1, 'bad', 2, 'a', 3, 'b');
    expect(
      await deadRetry(c, keys, { id: null, batch: 10, eventsCap: FAILURES_ONLY, layout: ZSET_LAYOUT }),
    ).toBe(2);
    expect(await c.zrange(keys.dead, 0, -1)).toEqual(['bad']);
    expect((await c.zrange(keys.waiting, 0, -1)).sort()).toEqual(['a', 'b']);
  });

  it('remove deletes a dead job for good and leaves any other job alone', async () => {
    const keys = queueKeys(uniqueQueue('dead-remove'));
    await c.hset(keys.records, 'd', record({ claim }), 'w', record({}));
    await c.hset(keys.errors, 'd', '{}');
    await c.zadd(keys.dead, 1, 'd');
    await c.zadd(keys.waiting, 1_900_000_000_000, 'w');
    expect(await deadRemove(c, keys, 'w')).toBe(false);
    expect(await deadRemove(c, keys, 'd')).toBe(true);
    expect(await nonEmptyKeys(c, keys)).toEqual([keys.records, keys.waiting].sort());
    expect(await c.hkeys(keys.records)).toEqual(['w']);
  });
});
