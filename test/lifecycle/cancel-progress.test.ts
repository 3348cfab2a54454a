/**
 * cancel.lua and progress.lua on layout 2. A cancel ends a waiting or a running job for good: the
 * record becomes the cancelled record, the id enters x, and a running job's holder hears
 * `C <member>`; afterwards that holder's progress (and fail) is refused as cancelled. Anything
 * that is not waiting or running is left alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { cancel } from '../../src/operations/cancel.js';
import { progress } from '../../src/operations/progress.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { queueKeys } from '../../src/redis/keys.js';
import { ScriptBadArg, ScriptLeaseLost } from '../../src/redis/script-errors.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import {
  CANCELLED,
  cancelledAfter,
  COMPLETED,
  counters,
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

const FAILURES_ONLY = -10_000;
const opts = { eventsCap: FAILURES_ONLY, layout: ZSET_LAYOUT };

describe('cancel', () => {
  it('cancels a waiting job: out of s, cancelled record, x entry, error gone, counted, event written', async () => {
    const keys = queueKeys(uniqueQueue('cancel'));
    await c.hset(keys.records, 'w1', record({ hasError: true }));
    await c.zadd(keys.waiting, 1_767_225_600_000, 'w1');
    await c.hset(keys.errors, 'w1', '{"name":"Error"}');
    const before = await serverNow(c);
    expect(await cancel(c, keys, { id: 'w1', ...opts })).toBe('waiting');
    const after = await serverNow(c);
    expect(await storedRecord(c, keys, 'w1')).toEqual(CANCELLED);
    const [id, at] = await c.zrange(keys.cancelled, 0, -1, 'WITHSCORES');
    expect(id).toBe('w1');
    expectWithin(Number(at), before, after);
    expect(await counters(c, keys)).toEqual({ cancelled: 1 });
    expect(await events(c, keys)).toEqual([{ type: 'cancelled', id: 'w1' }]);
    expect(await nonEmptyKeys(c, keys)).toEqual(
      [keys.records, keys.cancelled, keys.counters, keys.events].sort(),
    );
  });

  it('cancels a due prioritized job waiting in r', async () => {
    const keys = queueKeys(uniqueQueue('cancel-prio'));
    await c.hset(keys.records, 'p1', record({ prio: -2 }));
    await c.zadd(keys.prioReady, readyScore(-2, 1_767_225_600_000), '-2:p1');
    expect(await cancel(c, keys, { id: 'p1', ...opts })).toBe('waiting');
    expect(await c.exists(keys.prioReady, keys.prioWaiting)).toBe(0);
    expect(await storedRecord(c, keys, 'p1')).toEqual(CANCELLED);
  });

  it('cancels a running job: its member leaves a, its holder hears C <member>, its progress is refused', async () => {
    const keys = queueKeys(uniqueQueue('cancel-run'));
    const now = await serverNow(c);
    const claim = { attempts: 1, claims: 1, claimedAt: now - 10, runDue: now - 20, holder: 1 };
    const member = memberOf('r1', claim);
    await c.hset(keys.records, 'r1', record({ claim }));
    await c.zadd(keys.leases, now + 30_000, member);
    await c.hset(keys.progress, 'r1', '50');

    const sub = new Redis(redis.url());
    const heard: string[] = [];
    sub.on('message', (_channel: string, message: string) => heard.push(message));
    await sub.subscribe(keys.wake);
    try {
      expect(await cancel(c, keys, { id: 'r1', ...opts })).toBe('running');
      await waitFor(() => heard.length > 0, { what: 'the C message' });
      expect(heard).toEqual([`C ${member}`]);
    } finally {
      sub.disconnect();
    }
    expect(await c.exists(keys.leases, keys.progress)).toBe(0);
    expect(await storedRecord(c, keys, 'r1')).toEqual(cancelledAfter(claim));
    await expect(progress(c, keys, { member, json: '60', capBytes: 100 })).rejects.toMatchObject({
      detail: 'cancelled',
    });
  });

  it('cancels a waiting job for a user whose lease and progress keys are read-only', async () => {
    const name = uniqueQueue('cancel-acl');
    const keys = queueKeys(name);
    await c.hset(keys.records, 'w2', record({}));
    await c.zadd(keys.waiting, 1_767_225_600_000, 'w2');
    const tag = `dq:{${name}}`;
    await c.call(
      'ACL',
      'SETUSER',
      name,
      'on',
      '>secret',
      'resetchannels',
      `&${tag}:w`,
      '+time',
      '+publish',
      `(~${tag}:* +evalsha +eval)`,
      `(~${tag}:s ~${tag}:p ~${tag}:r ~${tag}:j ~${tag}:x ~${tag}:e ~${tag}:n ~${tag}:ev +hget +hset +hdel +zscore +zrange +zadd +zrem +hincrby +xadd)`,
      `(%R~${tag}:a %R~${tag}:pg +zscore)`,
    );
    const producer = new Redis(redis.url(), { username: name, password: 'secret', enableReadyCheck: false });
    try {
      expect(await cancel(producer, keys, { id: 'w2', ...opts })).toBe('waiting');
    } finally {
      producer.disconnect();
      await c.call('ACL', 'DELUSER', name);
    }
    expect(await storedRecord(c, keys, 'w2')).toEqual(CANCELLED);
  });

  it('leaves unknown, dead, completed and cancelled jobs alone and writes nothing', async () => {
    const keys = queueKeys(uniqueQueue('cancel-none'));
    await c.hset(keys.records, 'dead', record({ hasError: true }), 'done', COMPLETED, 'gone', CANCELLED);
    await c.zadd(keys.dead, 1_767_225_600_000, 'dead');
    await c.zadd(keys.completed, 1_767_225_600_000, 'done');
    await c.zadd(keys.cancelled, 1_767_225_600_000, 'gone');
    const state = await nonEmptyKeys(c, keys);
    for (const id of ['unknown', 'dead', 'done', 'gone']) {
      expect(await cancel(c, keys, { id, ...opts })).toBeNull();
    }
    expect(await nonEmptyKeys(c, keys)).toEqual(state);
    expect(await storedRecord(c, keys, 'dead')).toEqual(record({ hasError: true }));
  });
});

describe('progress', () => {
  it('writes for the holder of a valid lease, and refuses an older claim and an expired lease', async () => {
    const keys = queueKeys(uniqueQueue('progress'));
    const now = await serverNow(c);
    const member = memberOf('j1', { claims: 2, claimedAt: now - 10 });
    await c.zadd(keys.leases, now + 30_000, member);
    await progress(c, keys, { member, json: '{"pct":40}', capBytes: 100 });
    expect(await c.hget(keys.progress, 'j1')).toBe('{"pct":40}');

    const older = memberOf('j1', { claims: 1, claimedAt: now - 5_000 });
    await expect(progress(c, keys, { member: older, json: '1', capBytes: 100 })).rejects.toThrow(
      ScriptLeaseLost,
    );
    await c.zadd(keys.leases, now - 1, member);
    await expect(progress(c, keys, { member, json: '2', capBytes: 100 })).rejects.toMatchObject({
      detail: 'expired',
    });
    expect(await c.hget(keys.progress, 'j1')).toBe('{"pct":40}');
  });

  it('refuses a value over the cap before writing', async () => {
    const keys = queueKeys(uniqueQueue('progress-cap'));
    const member = memberOf('j2', { claims: 1, claimedAt: 1 });
    await c.zadd(keys.leases, (await serverNow(c)) + 30_000, member);
    await expect(progress(c, keys, { member, json: '"0123456789"', capBytes: 5 })).rejects.toThrow(
      ScriptBadArg,
    );
    expect(await c.exists(keys.progress)).toBe(0);
  });
});
