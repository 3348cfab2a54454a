/**
 * The lifecycle scripts with the wheel strategy: a job they put back in waiting goes to its bucket
 * list (later) or to the ready list (due now), with its due time in the wheel's dues hash; a cancel
 * or reschedule takes it out of its bucket. A bucket the caller did not pass is asked for by name
 * (DELAYQ_WRONG_BUCKET) before anything is written, and the wrapper calls again with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { ServerClock } from '../../src/clock.js';
import { fail } from '../../src/operations/fail.js';
import { cancel } from '../../src/operations/cancel.js';
import { deadRetry } from '../../src/operations/dead-retry.js';
import { reschedule } from '../../src/operations/reschedule.js';
import { reap } from '../../src/operations/reap.js';
import { release } from '../../src/operations/release.js';
import { bucketStart, type WheelLayout } from '../../src/operations/wheel.js';
import { queueKeys, wheelBucketKey, type QueueKeys } from '../../src/redis/keys.js';
import { inspector, serverNow, uniqueQueue, useRedis } from '../support/fixtures.js';
import { CANCELLED, memberOf, record } from './seed.js';

const redis = useRedis();
let c: Redis;
beforeAll(() => {
  c = inspector(redis.url());
});
afterAll(async () => {
  await c.quit();
});

const G = 1_000;
const FAILURES_ONLY = -10_000;

/** A wheel layout whose clock estimate has never seen the server: its first guesses are wrong. */
function wheel(): WheelLayout {
  return { kind: 'wheel', granularityMs: G, clock: new ServerClock() };
}

async function held(keys: QueueKeys, id: string, attempts: number) {
  const now = await serverNow(c);
  const claim = { attempts, claims: attempts, claimedAt: now - 10, runDue: now - 20, holder: 1 };
  await c.hset(keys.records, id, record({ claim }));
  const member = memberOf(id, claim);
  await c.zadd(keys.leases, now + 30_000, member);
  return member;
}

/** Where the wheel holds `id`: its bucket's start and list, or 'ready'. */
async function whereIs(keys: QueueKeys, id: string, due: number): Promise<string> {
  if ((await c.lrange(keys.ready, 0, -1)).includes(id)) return 'ready';
  const start = bucketStart(due, G);
  const list = await c.lrange(wheelBucketKey(keys, start), 0, -1);
  return list.includes(id) ? `bucket ${start}` : 'nowhere';
}

describe('lifecycle scripts, wheel strategy', () => {
  it('fail puts a retry in the bucket of its due time, with the due time in the dues hash', async () => {
    const keys = queueKeys(uniqueQueue('w-fail'));
    const member = await held(keys, 'f', 1);
    const out = await fail(c, keys, {
      member,
      retryDelayMs: 60_000,
      error: { name: 'Error', message: 'x' },
      deadMaxCount: 10,
      deadMaxAgeMs: 0,
      eventsCap: FAILURES_ONLY,
      layout: wheel(),
    });
    expect(out.outcome).toBe('retry');
    const at = out.outcome === 'retry' ? out.at : -1;
    expect(await whereIs(keys, 'f', at)).toBe(`bucket ${bucketStart(at, G)}`);
    expect(Number(await c.hget(keys.wheelCount, 'f'))).toBe(at);
    expect(await c.exists(keys.waiting)).toBe(0);
  });

  it('release and reap put a job due now in the ready list', async () => {
    const keys = queueKeys(uniqueQueue('w-ready'));
    const r1 = await held(keys, 'rel', 1);
    expect(
      await release(c, keys, { member: r1, delayMs: 0, eventsCap: FAILURES_ONLY, layout: wheel() }),
    ).toBe(true);
    const now = await serverNow(c);
    await c.hset(
      keys.records,
      'exp',
      record({ claim: { attempts: 1, claims: 1, claimedAt: now - 9, runDue: now - 9, holder: 1 } }),
    );
    await c.zadd(keys.leases, now - 1, memberOf('exp', { claims: 1, claimedAt: now - 9 }));
    const out = await reap(c, keys, {
      limit: 10,
      deadMaxCount: 10,
      deadMaxAgeMs: 0,
      eventsCap: FAILURES_ONLY,
      layout: wheel(),
    });
    expect(out.returned).toBe(1);
    expect(await c.lrange(keys.ready, 0, -1)).toEqual(['rel', 'exp']);
    expect(await c.exists(keys.waiting, keys.leases)).toBe(0);
  });

  it('cancel takes a waiting job out of its bucket (asking for it: the wrapper does not guess it); reschedule moves one to another bucket', async () => {
    const keys = queueKeys(uniqueQueue('w-move'));
    const now = await serverNow(c);
    const layout = wheel();
    const dueA = now + 120_000;
    const dueB = now + 300_000;
    await c.hset(keys.records, 'a', record({}), 'b', record({}));
    const startA = bucketStart(dueA, G);
    await c.rpush(wheelBucketKey(keys, startA), 'a', 'b');
    await c.zadd(keys.wheel, startA + G, String(startA));
    await c.hset(keys.wheelCount, 'a', dueA, 'b', dueA);

    expect(await cancel(c, keys, { id: 'a', eventsCap: FAILURES_ONLY, layout })).toBe('waiting');
    expect(await c.lrange(wheelBucketKey(keys, startA), 0, -1)).toEqual(['b']);
    expect(await c.hexists(keys.wheelCount, 'a')).toBe(0);
    expect(await c.hgetBuffer(keys.records, 'a')).toEqual(CANCELLED);

    expect(await reschedule(c, keys, { id: 'b', when: { at: dueB }, eventsCap: FAILURES_ONLY, layout })).toBe(
      dueB,
    );
    expect(await c.exists(wheelBucketKey(keys, startA))).toBe(0);
    expect(await c.zrange(keys.wheel, 0, -1)).toEqual([String(bucketStart(dueB, G))]);
    expect(await whereIs(keys, 'b', dueB)).toBe(`bucket ${bucketStart(dueB, G)}`);
  });

  it('dead.retry puts a dead job in the ready list', async () => {
    const keys = queueKeys(uniqueQueue('w-dead'));
    await c.hset(
      keys.records,
      'd',
      record({ claim: { attempts: 3, claims: 3, claimedAt: 1, runDue: 1, holder: 1 } }),
    );
    await c.zadd(keys.dead, 1, 'd');
    expect(await deadRetry(c, keys, { id: 'd', batch: 1, eventsCap: FAILURES_ONLY, layout: wheel() })).toBe(
      1,
    );
    expect(await c.lrange(keys.ready, 0, -1)).toEqual(['d']);
  });
});
