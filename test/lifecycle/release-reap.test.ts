/**
 * release.lua and reap.lua on layout 2. A release gives the attempt back (attempts − 1) and keeps
 * the claim count, so the next claim's token differs from every earlier one; a reap ends only
 * leases whose deadline passed, records LeaseExpired with the lease's token, and returns the job
 * due now or buries it when its attempts are spent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { reap } from '../../src/operations/reap.js';
import { release } from '../../src/operations/release.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { queueKeys, type QueueKeys } from '../../src/redis/keys.js';
import { inspector, serverNow, uniqueQueue, useRedis } from '../support/fixtures.js';
import { counters, events, expectWithin, memberOf, nonEmptyKeys, record, storedRecord } from './seed.js';

const redis = useRedis();
let c: Redis;
beforeAll(() => {
  c = inspector(redis.url());
});
afterAll(async () => {
  await c.quit();
});

const FAILURES_ONLY = -10_000;
const ALL_EVENTS = 10_000;

async function held(keys: QueueKeys, id: string, attempts: number, deadline: number, max?: number) {
  const now = await serverNow(c);
  const claim = { attempts, claims: attempts + 1, claimedAt: now - 100, runDue: now - 200, holder: 3 };
  await c.hset(keys.records, id, record(max === undefined ? { claim } : { claim, max }));
  const member = memberOf(id, claim);
  await c.zadd(keys.leases, deadline, member);
  return { member, claim };
}

describe('release', () => {
  it('hands the job back uncharged: attempts − 1, claims kept, due after the delay, progress gone', async () => {
    const keys = queueKeys(uniqueQueue('rel'));
    const now = await serverNow(c);
    const { member, claim } = await held(keys, 'r1', 2, now + 30_000);
    await c.hset(keys.progress, 'r1', '5');
    const before = await serverNow(c);
    expect(
      await release(c, keys, { member, delayMs: 1_000, eventsCap: FAILURES_ONLY, layout: ZSET_LAYOUT }),
    ).toBe(true);
    const after = await serverNow(c);
    expect(await storedRecord(c, keys, 'r1')).toEqual(record({ claim: { ...claim, attempts: 1 } }));
    const [id, score] = await c.zrange(keys.waiting, 0, -1, 'WITHSCORES');
    expect(id).toBe('r1');
    expectWithin(Number(score), before + 1_000, after + 1_000);
    // `released` is routine: not written with the failures-only stream.
    expect(await nonEmptyKeys(c, keys)).toEqual([keys.records, keys.waiting].sort());
  });

  it('writes the released event only with events all', async () => {
    const keys = queueKeys(uniqueQueue('rel-ev'));
    const { member } = await held(keys, 'r2', 1, (await serverNow(c)) + 30_000);
    await release(c, keys, { member, delayMs: 0, eventsCap: ALL_EVENTS, layout: ZSET_LAYOUT });
    expect(await events(c, keys)).toEqual([{ type: 'released', id: 'r2' }]);
  });

  it('answers false and writes nothing when the member holds no valid lease', async () => {
    const keys = queueKeys(uniqueQueue('rel-lost'));
    const { member } = await held(keys, 'r3', 1, (await serverNow(c)) - 1);
    expect(
      await release(c, keys, { member, delayMs: 0, eventsCap: FAILURES_ONLY, layout: ZSET_LAYOUT }),
    ).toBe(false);
    expect(await nonEmptyKeys(c, keys)).toEqual([keys.records, keys.leases].sort());
  });
});

describe('reap', () => {
  it('returns an expired job due now (attempt stays charged) and buries one whose attempts are spent', async () => {
    const keys = queueKeys(uniqueQueue('reap'));
    const now = await serverNow(c);
    const back = await held(keys, 'back', 1, now - 10);
    const spent = await held(keys, 'spent', 3, now - 5);
    const live = await held(keys, 'live', 1, now + 60_000);
    await c.hset(keys.progress, 'back', '1', 'spent', '2');

    const out = await reap(c, keys, {
      limit: 100,
      deadMaxCount: 100,
      deadMaxAgeMs: 0,
      eventsCap: FAILURES_ONLY,
      layout: ZSET_LAYOUT,
    });
    const after = await serverNow(c);
    expect(out).toEqual({ returned: 1, buried: 1, nextDeadline: now + 60_000 });

    expect(await c.zrange(keys.leases, 0, -1)).toEqual([live.member]);
    const [id, due] = await c.zrange(keys.waiting, 0, -1, 'WITHSCORES');
    expect(id).toBe('back');
    expectWithin(Number(due), now, after);
    expect(await c.zrange(keys.dead, 0, -1)).toEqual(['spent']);
    expect(await storedRecord(c, keys, 'back')).toEqual(record({ claim: back.claim, hasError: true }));
    expect(await storedRecord(c, keys, 'spent')).toEqual(record({ claim: spent.claim, hasError: true }));
    const error = JSON.parse((await c.hget(keys.errors, 'back')) ?? 'null') as unknown;
    expect(error).toMatchObject({
      name: 'LeaseExpired',
      attempt: 1,
      token: `${back.claim.claims}.${back.claim.claimedAt}`,
    });
    expect(await c.exists(keys.progress)).toBe(0);
    expect(await counters(c, keys)).toEqual({ reaped: 2, dead: 1 });
    expect((await events(c, keys)).map((e) => `${e.type} ${e.id}`).sort()).toEqual(
      ['dead spent', 'lease-lost back', 'lease-lost spent'].sort(),
    );

    // Idempotent: nothing left to reap.
    const again = await reap(c, keys, {
      limit: 100,
      deadMaxCount: 100,
      deadMaxAgeMs: 0,
      eventsCap: FAILURES_ONLY,
      layout: ZSET_LAYOUT,
    });
    expect(again).toEqual({ returned: 0, buried: 0, nextDeadline: now + 60_000 });
  });

  it('buries an expired job whose record cannot be read, with the reason, instead of running it', async () => {
    const keys = queueKeys(uniqueQueue('reap-bad'));
    const member = memberOf('odd', { claims: 1, claimedAt: 1_767_225_600_123 });
    await c.hset(keys.records, 'odd', Buffer.from([0x07, 0x00, 0x41]));
    await c.zadd(keys.leases, 1_767_225_600_500, member);
    const out = await reap(c, keys, {
      limit: 10,
      deadMaxCount: 100,
      deadMaxAgeMs: 0,
      eventsCap: FAILURES_ONLY,
      layout: ZSET_LAYOUT,
    });
    expect(out).toEqual({ returned: 0, buried: 1, nextDeadline: -1 });
    expect(await c.zrange(keys.dead, 0, -1)).toEqual(['odd']);
    expect(await storedRecord(c, keys, 'odd')).toEqual(Buffer.from([0x07, 0x00, 0x41]));
    expect(JSON.parse((await c.hget(keys.errors, 'odd')) ?? 'null')).toMatchObject({ name: 'BadRecord' });
  });

  it('ends a lease whose record was deleted outside delayq, leaving no error behind', async () => {
    const keys = queueKeys(uniqueQueue('reap-gone'));
    await c.zadd(
      keys.leases,
      1_767_225_600_500,
      memberOf('gone', { claims: 1, claimedAt: 1_767_225_600_123 }),
    );
    const out = await reap(c, keys, {
      limit: 10,
      deadMaxCount: 100,
      deadMaxAgeMs: 0,
      eventsCap: FAILURES_ONLY,
      layout: ZSET_LAYOUT,
    });
    expect(out).toEqual({ returned: 0, buried: 0, nextDeadline: -1 });
    expect(await nonEmptyKeys(c, keys)).toEqual([keys.counters, keys.events].sort());
    expect(await events(c, keys)).toEqual([{ type: 'lease-lost', id: 'gone' }]);
  });

  it('keeps the dead set within its count when it buries', async () => {
    const keys = queueKeys(uniqueQueue('reap-trim'));
    const now = await serverNow(c);
    await c.zadd(keys.dead, now - 3_000, 'old1', now - 2_000, 'old2');
    await c.hset(keys.records, 'old1', record({}), 'old2', record({}));
    await c.hset(keys.errors, 'old1', '{}', 'old2', '{}');
    await held(keys, 'new', 3, now - 1);
    await reap(c, keys, { limit: 10, deadMaxCount: 2, deadMaxAgeMs: 0, eventsCap: 0, layout: ZSET_LAYOUT });
    expect(await c.zrange(keys.dead, 0, -1)).toEqual(['old2', 'new']);
    expect(await c.hexists(keys.records, 'old1')).toBe(0);
    expect(await c.hexists(keys.errors, 'old1')).toBe(0);
  });
});
