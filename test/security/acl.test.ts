/**
 * Least privilege (issue 8, item 4): the ACL rules of docs/SECURITY.md, read from that file and
 * applied to a real redis-server, are enough for a producer, a worker and a read-only dashboard to
 * do their work, and no more: a producer cannot claim (or extend, ack, release, or write a lease),
 * no role reaches another queue, and the dashboard cannot write.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { describe, expect, test } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { discoverQueues } from '../../src/inspect/discover.js';
import { Inspector } from '../../src/inspect/inspector.js';
import { ack, type AckSettings } from '../../src/operations/ack.js';
import { claim, type ClaimInput } from '../../src/operations/claim.js';
import { extend } from '../../src/operations/extend.js';
import { fail } from '../../src/operations/fail.js';
import { release } from '../../src/operations/release.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { registerHolder } from '../../src/operations/worker-register.js';
import { queueKeys } from '../../src/redis/keys.js';
import { waitFor } from '../support/fixtures.js';
import { everyFate, useAclServer, type KindPayload } from './acl-rules.js';

const QUEUE = 'emails';
const keys = queueKeys(QUEUE);
const { rules, admin, as, cleanups } = useAclServer();

function clientAs(role: string): Redis {
  const c = new Redis(as(role, { maxRetriesPerRequest: 1 }));
  cleanups.push(() => c.quit());
  return c;
}

function queueAs<T>(role: string, name = QUEUE): Queue<T> {
  const q = new Queue<T>(name, { connection: as(role) });
  cleanups.push(() => q.close());
  return q;
}

/** Resolve to the NOPERM message `call` fails with; fail the test if it succeeds. */
async function refused(call: Promise<unknown>): Promise<string> {
  try {
    await call;
  } catch (err) {
    const message = (err as Error).message;
    expect(message).toMatch(/NOPERM|can't (access|run)|no permissions/);
    return message;
  }
  throw new Error('expected NOPERM, but the call succeeded');
}

const settings = (holder: number): AckSettings => ({
  strategy: 'zpopmin',
  leaseMs: 30_000,
  holder,
  deadMaxCount: 1_000,
  deadMaxAgeMs: 0,
  rate: { max: 0, perMs: 0 },
  eventsCap: -10_000,
  zmscore: true,
  layout: ZSET_LAYOUT,
});

const claimInput = (holder: number): ClaimInput => ({ ...settings(holder), limit: 10 });

/** Claim as a real worker would: register a holder number for `workerId`, then claim. */
async function claimAs(client: Redis, workerId: string, queueKeysOf = keys) {
  const holder = await registerHolder(client, queueKeysOf, workerId);
  return { holder, ...(await claim(client, queueKeysOf, claimInput(holder))) };
}

/** The selectors docs/SECURITY.md adds to the producer's rule for `what` (cancel, pause). */
function documentedSelectors(what: 'cancel' | 'pause'): string[] {
  const doc = readFileSync(fileURLToPath(new URL('../../docs/SECURITY.md', import.meta.url)), 'utf8');
  const pattern =
    what === 'cancel'
      ? /cancel running jobs\s+one more selector, `([^`]+)`/
      : /give the producer's rule two more selectors,\s+`([^`]+)`/;
  const selectors = (pattern.exec(doc)?.[1] ?? '').replace(/\s+/g, ' ').match(/\([^)]*\)/g);
  if (!selectors) throw new Error(`docs/SECURITY.md names no selector to ${what}`);
  return selectors;
}

/** A Queue as a producer whose rule has one more documented selector, for `what`. */
async function producerWith(what: 'cancel' | 'pause'): Promise<{ queue: Queue<number>; client: Redis }> {
  const rule = rules.get('delayq-producer')!;
  const user = `delayq-producer-${what}`;
  await admin().call('ACL', 'SETUSER', user, 'reset', ...rule.args, ...documentedSelectors(what));
  cleanups.push(() => admin().call('ACL', 'DELUSER', user));
  const connection = { ...as('delayq-producer'), username: user };
  const queue = new Queue<number>(QUEUE, { connection });
  const client = new Redis({ ...connection, maxRetriesPerRequest: 1 });
  cleanups.push(
    () => queue.close(),
    () => client.quit(),
  );
  return { queue, client };
}

describe('ACL rules of docs/SECURITY.md', () => {
  test('the document has the three roles, and a producer and a worker for a wheel queue', () => {
    expect([...rules.keys()].sort()).toEqual([
      'delayq-dashboard',
      'delayq-producer',
      'delayq-wheel-producer',
      'delayq-wheel-worker',
      'delayq-worker',
    ]);
  });

  test('a producer does all of its work', async () => {
    const q = queueAs<{ n: number }>('delayq-producer');
    await q.add({ n: 1 }, { id: 'a', delay: 60_000 });
    await q.addBulk([
      { payload: { n: 2 }, opts: { id: 'b', delay: 60_000 } },
      { payload: { n: 3 }, opts: { id: 'c' } },
      // Priorities live in their own sets: p while waiting, r once due.
      { payload: { n: 6 }, opts: { id: 'urgent-later', delay: 60_000, priority: -5 } },
      { payload: { n: 7 }, opts: { id: 'urgent-now', priority: -5 } },
    ]);
    expect(await admin().zrange(keys.prioWaiting, 0, -1)).toEqual(['-5:urgent-later']);
    expect(await admin().zrange(keys.prioReady, 0, -1)).toEqual(['-5:urgent-now']);
    expect((await q.get('a'))?.payload).toEqual({ n: 1 });
    expect((await q.get('urgent-later'))?.priority).toBe(-5);
    expect(await q.get('nope')).toBeNull();
    expect(await q.counts()).toMatchObject({ scheduled: 5, due: 2 });
    expect((await q.list('scheduled')).map((j) => j.id)).toEqual([
      'urgent-now',
      'c',
      'a',
      'b',
      'urgent-later',
    ]);
    expect(await q.list('active')).toEqual([]);
    expect(await q.reschedule('a', { delay: 120_000 })).toBe(true);
    // Debounce: a replace reads the lease, dead and completed sets, and moves the waiting job.
    expect(await q.add({ n: 4 }, { id: 'a', delay: 90_000, onExists: 'replace' })).toMatchObject({
      replaced: true,
    });
    expect((await q.get('a'))?.payload).toEqual({ n: 4 });
    expect(await q.cancel('b')).toBe(true);
    expect(await q.cancel('urgent-now')).toBe(true);
    expect(await admin().zcard(keys.prioReady)).toBe(0);
    expect((await q.list('cancelled')).map((j) => j.id)).toEqual(['urgent-now', 'b']);
    // Dead-set management: make 'c' dead with the worker's rights, then retry and remove it.
    const worker = clientAs('delayq-worker');
    const { jobs } = await claimAs(worker, 'w');
    const [held] = jobs;
    expect(jobs.map((j) => j.id)).toEqual(['c']);
    expect(await q.add({ n: 5 }, { id: 'c', onExists: 'replace' })).toMatchObject({ state: 'active' });
    await fail(worker, keys, {
      member: held!.member,
      retryDelayMs: null,
      error: { name: 'Error', message: 'boom' },
      deadMaxCount: 1_000,
      deadMaxAgeMs: 0,
      eventsCap: -10_000,
      layout: ZSET_LAYOUT,
    });
    expect((await q.dead.list()).map((j) => j.id)).toEqual(['c']);
    expect(await q.dead.retry('c')).toBe(1);
    expect((await q.get('c'))?.state).toBe('scheduled');
    expect(await q.dead.retryAll()).toBe(0);
    expect(await q.dead.remove('c')).toBe(false);
  });

  test('a worker does all of its work: complete, fail and retry, die, progress, extend, release at close', async () => {
    const producer = queueAs<KindPayload>('delayq-producer');
    const { handler, seen, longStarted } = everyFate();
    const errors: Error[] = [];
    const worker = new Worker<KindPayload>(QUEUE, handler, {
      connection: as('delayq-worker'),
      concurrency: 4,
      backoff: { type: 'fixed', delay: 10 },
    });
    worker.on('error', (err) => errors.push(err));
    cleanups.push(() => worker.close({ timeoutMs: 100 }));
    await worker.waitUntilReady();
    await producer.addBulk([
      { payload: { kind: 'ok' }, opts: { id: 'ok' } },
      { payload: { kind: 'flaky' }, opts: { id: 'flaky', attempts: 2 } },
      { payload: { kind: 'doomed' }, opts: { id: 'doomed', attempts: 2 } },
      { payload: { kind: 'long' }, opts: { id: 'long' } },
    ]);
    await waitFor(async () => longStarted() && (await producer.counts()).dead === 1 && seen.length >= 6, {
      timeoutMs: 15_000,
      what: 'every job run',
    });
    // The long job's progress, written by the worker, read by the producer.
    await waitFor(async () => (await producer.get('long'))?.progress !== undefined, { what: 'the progress' });
    expect((await producer.get('long'))?.progress).toEqual({ step: 1 });
    await worker.close({ timeoutMs: 100 });
    expect(errors).toEqual([]);
    expect(seen.sort()).toEqual(['doomed#1', 'doomed#2', 'flaky#1', 'flaky#2', 'long#1', 'ok#1']);
    expect((await producer.get('doomed'))?.lastError?.message).toBe('always fails');
    const long = await producer.get('long');
    expect(long?.state, 'released at close').toBe('scheduled');
    expect(long?.attempts).toBe(0);
    expect((await producer.list('completed')).map((j) => j.id).sort()).toEqual(['flaky', 'ok']);
    // Debounce after completion: the producer adds the completed id again, which takes it out of
    // c and deletes its log lines (add.lua); a producer writes nothing else of those keys.
    await admin().hset(keys.logs, 'ok', 'old lines');
    expect(
      await producer.add({ kind: 'ok' }, { id: 'ok', delay: 60_000, onExists: 'replace' }),
    ).toMatchObject({
      created: true,
    });
    expect(await admin().hexists(keys.logs, 'ok')).toBe(0);
    expect((await producer.list('completed')).map((j) => j.id)).toEqual(['flaky']);
    // The long job released at close, and 'ok' waiting again.
    expect(await producer.counts()).toMatchObject({ scheduled: 2, active: 0, dead: 1, completed: 1 });
  });

  test('a producer cannot claim, extend, ack or release, nor write a lease, a completion or a holder', async () => {
    const producer = queueAs<number>('delayq-producer');
    await producer.add(1, { id: 'x' });
    const p = clientAs('delayq-producer');
    await refused(claim(p, keys, claimInput(1)));
    expect((await producer.get('x'))?.state, 'the job is untouched').toBe('scheduled');
    await refused(registerHolder(p, keys, 'intruder'));
    // Even with the lease member in hand (the worker's), nothing fenced goes through.
    const w = clientAs('delayq-worker');
    const { jobs, holder } = await claimAs(w, 'w');
    const held = jobs[0]!;
    expect(held.id).toBe('x');
    const lease = (await producer.get('x'))?.lease;
    expect(lease?.workerId, 'the producer can read the lease').toBe('w');
    const member = held.member;
    await refused(extend(p, keys, 60_000, [member], true));
    await refused(release(p, keys, { member, delayMs: 0, eventsCap: 0, layout: ZSET_LAYOUT }));
    await refused(
      ack(
        p,
        keys,
        { member, knownDeadline: held.deadline, hadError: false, progressed: false },
        settings(holder),
      ),
    );
    await refused(p.zadd(keys.leases, Date.now() + 60_000, `9.1|x`));
    await refused(p.zrem(keys.leases, member));
    await refused(p.zadd(keys.completed, 0, 'x'));
    await refused(p.hincrby(keys.holders, '#', 1));
    await refused(p.zpopmin(keys.waiting));
    await refused(p.call('EVAL', "return redis.call('ZADD', KEYS[1], 0, 'forged')", 1, keys.leases));
    await refused(producer.pause());
    expect(await admin().exists(keys.paused)).toBe(0);
    // Cancelling a running job takes its lease away: not this role's right (docs/SECURITY.md).
    await refused(producer.cancel('x'));
    expect(Number(await admin().zscore(keys.leases, member))).toBe(held.deadline);
    expect(await admin().zrange(keys.leases, 0, -1)).toEqual([member]);
  });

  test('with the selector docs/SECURITY.md gives, a producer cancels a running job', async () => {
    const { queue: canceller, client: c } = await producerWith('cancel');
    await canceller.add(1, { id: 'x' });
    const w = clientAs('delayq-worker');
    const { jobs, holder } = await claimAs(w, 'w');
    const held = jobs[0]!;
    expect(await canceller.cancel('x')).toBe(true);
    expect((await canceller.get('x'))?.state).toBe('cancelled');
    expect(await admin().zcard(keys.leases)).toBe(0);
    // The holder's late ack is refused, not applied.
    await expect(
      ack(
        w,
        keys,
        { member: held.member, knownDeadline: held.deadline, hadError: false, progressed: false },
        settings(holder),
      ),
    ).rejects.toThrow(/cancelled/);
    // Still no claim, and no lease written by hand.
    await canceller.add(2, { id: 'y' });
    await refused(claim(c, keys, claimInput(holder)));
    await refused(c.zadd(keys.leases, Date.now() + 60_000, '9.1|y'));
    expect((await canceller.get('y'))?.state).toBe('scheduled');
  });

  test('with the selectors docs/SECURITY.md gives, a producer pauses and resumes the queue, and nothing more', async () => {
    const { queue: operator, client: c } = await producerWith('pause');
    await operator.add(1, { id: 'x' });
    await operator.pause();
    expect(await operator.isPaused()).toBe(true);
    expect(await admin().exists(keys.paused)).toBe(1);
    // The worker's claim takes nothing while paused.
    const w = clientAs('delayq-worker');
    const paused = await claimAs(w, 'w');
    expect(paused.paused).toBe(true);
    expect(paused.jobs).toEqual([]);
    await operator.resume();
    expect(await operator.isPaused()).toBe(false);
    expect((await claimAs(w, 'w')).jobs.map((j) => j.id)).toEqual(['x']);
    // The selectors grant SET and DEL on the pause key only.
    await refused(c.set(keys.records, 'x'));
    await refused(c.del(keys.waiting));
    await refused(claim(c, keys, claimInput(1)));
  });

  test('no role reaches another queue', async () => {
    const other = queueKeys('other');
    await refused(queueAs<number>('delayq-producer', 'other').add(1));
    await refused(clientAs('delayq-producer').zcard(other.waiting));
    await refused(claim(clientAs('delayq-worker'), other, claimInput(1)));
    await refused(registerHolder(clientAs('delayq-worker'), other, 'w'));
    await refused(clientAs('delayq-worker').subscribe(other.wake));
    expect(await admin().keys('dq:{other}:*')).toEqual([]);
  });

  test('the dashboard reads everything and writes nothing', async () => {
    const producer = queueAs<number>('delayq-producer');
    await producer.addBulk([
      { payload: 1, opts: { id: 'soon', delay: 5_000 } },
      { payload: 2, opts: { id: 'later', delay: 120_000 } },
    ]);
    const board = queueAs<number>('delayq-dashboard');
    const c = clientAs('delayq-dashboard');
    expect(await discoverQueues(c)).toEqual([QUEUE]);
    expect(await board.counts()).toEqual({
      scheduled: 2,
      due: 0,
      held: 0,
      active: 0,
      dead: 0,
      completed: 0,
      cancelled: 0,
      waitingChildren: 0,
    });
    expect((await board.list('scheduled')).map((j) => j.id)).toEqual(['soon', 'later']);
    expect((await board.get('later'))?.payload).toBe(2);
    expect(await board.isPaused()).toBe(false);
    const inspector = await Inspector.open(c, QUEUE);
    cleanups.push(() => inspector.close());
    const { histogram } = await inspector.figures();
    expect(histogram.counts.reduce((a, b) => a + b, 0) + histogram.overdue).toBe(2);

    await refused(board.add(3));
    await refused(board.cancel('soon'));
    await refused(board.reschedule('soon', { delay: 1 }));
    await refused(board.pause());
    // A dead job to try retrying and removing.
    await producer.add(9, { id: 'gone' });
    const w = clientAs('delayq-worker');
    const [held] = (await claimAs(w, 'w')).jobs;
    await fail(w, keys, {
      member: held!.member,
      retryDelayMs: null,
      error: { name: 'Error', message: 'boom' },
      deadMaxCount: 1_000,
      deadMaxAgeMs: 0,
      eventsCap: -10_000,
      layout: ZSET_LAYOUT,
    });
    expect((await board.dead.list()).map((j) => j.id)).toEqual(['gone']);
    expect((await board.get('gone'))?.lastError?.message).toBe('boom');
    // It follows the events stream (XREVRANGE, XREAD): failure events are always written.
    const stop = new AbortController();
    const seen: string[] = [];
    for await (const event of board.events({ from: '0', signal: stop.signal, blockMs: 100 })) {
      seen.push(`${event.type} ${event.jobId}`);
      if (seen.length === 2) stop.abort();
    }
    expect(seen).toEqual(['failed gone', 'dead gone']);
    // And the counters the charts and /metrics read.
    expect(await c.hmget(keys.counters, 'added', 'dead')).toEqual(['3', '1']);

    await refused(board.dead.retryAll());
    await refused(board.dead.remove('gone'));
    await refused(c.del(keys.waiting));
    await refused(c.hset(keys.records, 'soon', 'x'));
    expect(await producer.counts()).toMatchObject({ scheduled: 2, dead: 1 });

    // Grouped jobs, which the counts walk group by group (ZRANGEBYLEX, ZLEXCOUNT): two due jobs
    // of one group, whose one slot holds the second back. The producer and the dashboard count them.
    await producer.add(10, { id: 'g1', group: 'customer' });
    await producer.add(11, { id: 'g2', group: 'customer' });
    const grouped = { scheduled: 4, due: 2, held: 1, dead: 1 };
    expect(await producer.counts()).toMatchObject(grouped);
    expect(await board.counts()).toMatchObject(grouped);
    expect(await inspector.figures()).toMatchObject({ ...grouped, histogram: { overdue: 2 } });
  });
});
