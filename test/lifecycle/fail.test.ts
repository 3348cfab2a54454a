/**
 * fail.lua on layout 2: a failed attempt is retried by its class after the delay, or buried with
 * its record kept; the error carries the failing lease's token, so a resent fail is answered
 * ALREADY; a member that holds no valid lease is refused with its reason and writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { fail, type FailInput } from '../../src/operations/fail.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { queueKeys, type QueueKeys } from '../../src/redis/keys.js';
import { ScriptBadArg, ScriptLeaseLost } from '../../src/redis/script-errors.js';
import { inspector, serverNow, uniqueQueue, useRedis } from '../support/fixtures.js';
import {
  counters,
  events,
  expectWithin,
  memberOf,
  nonEmptyKeys,
  readyScore,
  record,
  storedRecord,
  type RecordSeed,
} from './seed.js';

const redis = useRedis();
let c: Redis;
beforeAll(() => {
  c = inspector(redis.url());
});
afterAll(async () => {
  await c.quit();
});

const EVENTS_FAILURES_ONLY = -10_000;

/** A job held by a lease: its record (claim block of attempt `attempts`) and member in `a`. */
async function held(keys: QueueKeys, id: string, attempts: number, seed: Omit<RecordSeed, 'claim'> = {}) {
  const now = await serverNow(c);
  const claim = { attempts, claims: attempts, claimedAt: now - 50, runDue: now - 60, holder: 7 };
  await c.hset(keys.records, id, record({ ...seed, claim }));
  const member = memberOf(id, claim);
  await c.zadd(keys.leases, now + 30_000, member);
  await c.hset(keys.progress, id, '{"done":1}');
  return { member, claim, token: `${claim.claims}.${claim.claimedAt}` };
}

function input(member: string, over: Partial<FailInput> = {}): FailInput {
  return {
    member,
    retryDelayMs: 5_000,
    error: { name: 'Error', message: 'boom' },
    deadMaxCount: 100,
    deadMaxAgeMs: 0,
    eventsCap: EVENTS_FAILURES_ONLY,
    layout: ZSET_LAYOUT,
    ...over,
  };
}

describe('fail', () => {
  it('retries a job with attempts left: due after the delay in s, E set, error with token, progress gone', async () => {
    const keys = queueKeys(uniqueQueue('fail'));
    const { member, claim, token } = await held(keys, 'job1', 1);
    const before = await serverNow(c);
    const out = await fail(c, keys, input(member));
    const after = await serverNow(c);

    expect(out.outcome).toBe('retry');
    const at = out.outcome === 'retry' ? out.at : -1;
    expectWithin(at, before + 5_000, after + 5_000);
    expect(await c.zrange(keys.waiting, 0, -1, 'WITHSCORES')).toEqual(['job1', String(at)]);
    // Same claim block and payload, now with flags B and E.
    expect(await storedRecord(c, keys, 'job1')).toEqual(record({ claim, hasError: true }));
    const error = JSON.parse((await c.hget(keys.errors, 'job1')) ?? 'null') as Record<string, unknown>;
    expect(error).toMatchObject({ name: 'Error', message: 'boom', attempt: 1, token });
    expectWithin(error.at as number, before, after);
    expect(await counters(c, keys)).toEqual({ failed: 1 });
    expect(await events(c, keys)).toEqual([{ type: 'failed', id: 'job1' }]);
    expect(await nonEmptyKeys(c, keys)).toEqual(
      [keys.records, keys.waiting, keys.errors, keys.counters, keys.events].sort(),
    );
  });

  it('retries a prioritized job into p (not due yet) under its "<prio>:<id>" member', async () => {
    const keys = queueKeys(uniqueQueue('fail-prio'));
    const { member } = await held(keys, 'pj', 1, { prio: -5 });
    const out = await fail(c, keys, input(member));
    expect(out.outcome).toBe('retry');
    expect(await c.zrange(keys.prioWaiting, 0, -1, 'WITHSCORES')).toEqual([
      '-5:pj',
      String(out.outcome === 'retry' ? out.at : -1),
    ]);
    expect(await c.exists(keys.waiting, keys.prioReady)).toBe(0);
  });

  it('a prioritized retry with no delay is due at once: straight into r, in priority order', async () => {
    const keys = queueKeys(uniqueQueue('fail-prio-now'));
    const { member } = await held(keys, 'pj', 1, { prio: 3 });
    const out = await fail(c, keys, input(member, { retryDelayMs: 0 }));
    const at = out.outcome === 'retry' ? out.at : -1;
    expect(await c.zrange(keys.prioReady, 0, -1, 'WITHSCORES')).toEqual(['3:pj', String(readyScore(3, at))]);
  });

  it('buries a job whose attempts are spent: record kept in j with E, entry in d, dead counted', async () => {
    const keys = queueKeys(uniqueQueue('fail-dead'));
    const { member, claim } = await held(keys, 'job2', 3);
    const out = await fail(c, keys, input(member));
    expect(out.outcome).toBe('dead');
    const at = out.outcome === 'dead' ? out.at : -1;
    expect(await c.zrange(keys.dead, 0, -1, 'WITHSCORES')).toEqual(['job2', String(at)]);
    expect(await storedRecord(c, keys, 'job2')).toEqual(record({ claim, hasError: true }));
    expect(await counters(c, keys)).toEqual({ dead: 1 });
    expect(await events(c, keys)).toEqual([
      { type: 'failed', id: 'job2' },
      { type: 'dead', id: 'job2' },
    ]);
    expect(await c.exists(keys.waiting, keys.leases, keys.progress)).toBe(0);
  });

  it('unrecoverable buries at once with attempts left, and says so in the error', async () => {
    const keys = queueKeys(uniqueQueue('fail-unrec'));
    const { member } = await held(keys, 'job3', 1, { max: 5 });
    const out = await fail(
      c,
      keys,
      input(member, { error: { name: 'UnrecoverableError', message: 'bad address', unrecoverable: true } }),
    );
    expect(out.outcome).toBe('dead');
    expect(await c.zcard(keys.dead)).toBe(1);
    expect(await c.zcard(keys.waiting)).toBe(0);
    expect(JSON.parse((await c.hget(keys.errors, 'job3')) ?? 'null')).toMatchObject({
      name: 'UnrecoverableError',
      unrecoverable: true,
      attempt: 1,
    });
  });

  it('a resent fail (same member, already applied) is answered already and writes nothing', async () => {
    const keys = queueKeys(uniqueQueue('fail-again'));
    const { member } = await held(keys, 'job4', 1);
    await fail(c, keys, input(member));
    const waiting = await c.zrange(keys.waiting, 0, -1, 'WITHSCORES');
    expect(await fail(c, keys, input(member))).toEqual({ outcome: 'already' });
    expect(await c.zrange(keys.waiting, 0, -1, 'WITHSCORES')).toEqual(waiting);
    expect(await counters(c, keys)).toEqual({ failed: 1 });
  });

  it('refuses a member of an older claim (not held) and an expired lease, writing nothing', async () => {
    const keys = queueKeys(uniqueQueue('fail-lost'));
    const { member, claim } = await held(keys, 'job5', 2);
    const stale = memberOf('job5', { claims: claim.claims - 1, claimedAt: claim.claimedAt - 1000 });
    await expect(fail(c, keys, input(stale))).rejects.toThrow(ScriptLeaseLost);
    await expect(fail(c, keys, input(stale))).rejects.toMatchObject({ detail: 'not held' });

    await c.zadd(keys.leases, (await serverNow(c)) - 1, member);
    await expect(fail(c, keys, input(member))).rejects.toMatchObject({ detail: 'expired' });
    expect(await nonEmptyKeys(c, keys)).toEqual([keys.records, keys.leases, keys.progress].sort());
  });

  it("tells a cancelled job's holder its lease was lost to the cancel", async () => {
    const keys = queueKeys(uniqueQueue('fail-cancelled'));
    const member = memberOf('job6', { claims: 1, claimedAt: 1_767_225_600_123 });
    await c.zadd(keys.cancelled, 1_767_225_600_500, 'job6');
    await expect(fail(c, keys, input(member))).rejects.toMatchObject({ detail: 'cancelled' });
  });

  it('refuses a retry delay that is not -1 or whole ms, by name, before writing', async () => {
    const keys = queueKeys(uniqueQueue('fail-arg'));
    const { member } = await held(keys, 'job7', 1);
    await expect(fail(c, keys, input(member, { retryDelayMs: 1.5 }))).rejects.toThrow(ScriptBadArg);
    expect(await c.zcard(keys.leases)).toBe(1);
  });
});
