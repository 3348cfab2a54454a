/**
 * Least privilege for a wheel queue: the wheel producer and worker rules of docs/SECURITY.md,
 * applied to a real redis-server, are enough to add, cancel, reschedule and run jobs through the
 * bucket lists, the ready list, the dues hash and the worker's blocking wait, with no error; and
 * the producer, though it writes the lists, still cannot claim, take from ready or write a lease.
 */
import { Redis } from 'ioredis';
import { describe, expect, test } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { ServerClock } from '../../src/clock.js';
import { claim } from '../../src/operations/claim.js';
import type { WheelLayout } from '../../src/operations/wheel.js';
import { queueKeys } from '../../src/redis/keys.js';
import { waitFor } from '../support/fixtures.js';
import { everyFate, useAclServer, type KindPayload } from './acl-rules.js';

const QUEUE = 'ticks';
const keys = queueKeys(QUEUE);
// Short buckets keep the test quick; the rules do not depend on the granularity.
const G = 100;
const { admin, as, cleanups } = useAclServer();

function producer<T>(): Queue<T> {
  const q = new Queue<T>(QUEUE, {
    connection: as('delayq-wheel-producer'),
    strategy: 'wheel',
    wheel: { granularityMs: G },
  });
  cleanups.push(() => q.close());
  return q;
}

describe('ACL rules of docs/SECURITY.md for a wheel queue', () => {
  test('the wheel producer and worker do all of their work', async () => {
    const queue = producer<KindPayload>();
    const { handler, seen, longStarted } = everyFate();
    const errors: Error[] = [];
    const worker = new Worker<KindPayload>(QUEUE, handler, {
      connection: as('delayq-wheel-worker'),
      strategy: 'wheel',
      wheel: { granularityMs: G },
      concurrency: 4,
      backoff: { type: 'fixed', delay: 10 },
    });
    worker.on('error', (err) => errors.push(err));
    cleanups.push(() => worker.close({ timeoutMs: 100 }));
    await worker.waitUntilReady();

    // Waiting jobs the producer moves and removes in their bucket lists.
    await queue.addBulk([
      { payload: { kind: 'ok' }, opts: { id: 'moved', delay: 60_000 } },
      { payload: { kind: 'ok' }, opts: { id: 'cancelled', delay: 60_000 } },
    ]);
    expect(await queue.reschedule('moved', { delay: 2 * G })).toBe(true);
    // A replace moves the job between bucket lists with the same rights.
    expect(
      await queue.add({ kind: 'ok' }, { id: 'moved', delay: 2 * G + 1, onExists: 'replace' }),
    ).toMatchObject({ replaced: true });
    expect(await queue.cancel('cancelled')).toBe(true);
    await queue.addBulk([
      { payload: { kind: 'ok' }, opts: { id: 'ok' } },
      { payload: { kind: 'flaky' }, opts: { id: 'flaky', attempts: 2 } },
      { payload: { kind: 'doomed' }, opts: { id: 'doomed', attempts: 2 } },
      { payload: { kind: 'long' }, opts: { id: 'long', delay: G } },
    ]);
    await waitFor(async () => longStarted() && (await queue.counts()).dead === 1 && seen.length >= 7, {
      timeoutMs: 15_000,
      what: 'every job run',
    });
    await worker.close({ timeoutMs: 100 });
    expect(errors).toEqual([]);
    expect(seen.sort()).toEqual(['doomed#1', 'doomed#2', 'flaky#1', 'flaky#2', 'long#1', 'moved#1', 'ok#1']);
    expect((await queue.get('doomed'))?.lastError?.message).toBe('always fails');
    const long = await queue.get('long');
    expect(long?.state, 'released at close').toBe('scheduled');
    expect(long?.attempts).toBe(0);
    expect((await queue.get('moved'))?.state).toBe('completed');
    expect((await queue.get('cancelled'))?.state).toBe('cancelled');
    // The dead job goes back through the wheel too.
    expect(await queue.dead.retry('doomed')).toBe(1);
    expect(await queue.counts()).toMatchObject({ scheduled: 2, active: 0, dead: 0 });
  });

  test('the wheel producer cannot claim, take from the ready list, or write a lease', async () => {
    const queue = producer<number>();
    await queue.add(1, { id: 'x' });
    const p = new Redis({ ...as('delayq-wheel-producer'), maxRetriesPerRequest: 1 });
    cleanups.push(() => p.quit());
    const layout: WheelLayout = { kind: 'wheel', granularityMs: G, clock: new ServerClock() };
    await expect(
      claim(p, keys, {
        strategy: 'wheel',
        layout,
        limit: 10,
        leaseMs: 30_000,
        holder: 1,
        deadMaxCount: 1_000,
        deadMaxAgeMs: 0,
        rate: { max: 0, perMs: 0 },
        eventsCap: 0,
        zmscore: true,
      }),
    ).rejects.toThrow(/NOPERM|can't (access|run)|no permissions/);
    await expect(p.lpop(keys.ready)).rejects.toThrow(/NOPERM|no permissions/);
    await expect(p.zadd(keys.leases, Date.now() + 60_000, `1.1|x`)).rejects.toThrow(/NOPERM|no permissions/);
    expect((await queue.get('x'))?.state, 'the job is untouched').toBe('scheduled');
    expect(await admin().lrange(keys.ready, 0, -1)).toEqual(['x']);
    expect(await admin().zcard(keys.leases)).toBe(0);
  });
});
