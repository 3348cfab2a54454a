/**
 * The wheel strategy: the conformance suite with its precision (one granularity), then what only the
 * wheel has: every path that puts a job back lands in the wheel (never the waiting ZSET, where no
 * wheel worker would look), each waiting job's due time in `wc`, the order a bucket's jobs run in,
 * the bucket protocol, the layout check, priorities refused, flows refused (flows.ts), the
 * BRPOPLPUSH fallback, and the lateness it actually shows.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  LayoutMismatchError,
  Queue,
  ValidationError,
  Worker,
  type Job,
  type WorkerOptions,
} from '../../src/index.js';
import { ServerClock } from '../../src/clock.js';
import { jsonCodec } from '../../src/codec/json.js';
import { add } from '../../src/operations/add.js';
import { claim, type ClaimInput } from '../../src/operations/claim.js';
import { fail } from '../../src/operations/fail.js';
import { reap } from '../../src/operations/reap.js';
import { release } from '../../src/operations/release.js';
import { bucketStart, type WheelLayout } from '../../src/operations/wheel.js';
import { encodeRecord, NEW_JOB_HEADER } from '../../src/record/index.js';
import { queueKeys, wheelBucketKey } from '../../src/redis/keys.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { flowTests } from './flows.js';
import { conformanceSuite } from './suite.js';

// The wheel's precision is its granularity: a job runs once its bucket's end has passed.
conformanceSuite('wheel', {}, undefined, { precisionMs: 1_000, granularityMs: 1_000 });
// The wheel keeps no flows: addFlow is refused.
flowTests('wheel');

const G = 1_000;
const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

function queueOf<T>(name: string, granularityMs = G): Queue<T> {
  const queue = new Queue<T>(name, { connection: redis.url(), strategy: 'wheel', wheel: { granularityMs } });
  closers.push(() => queue.close());
  return queue;
}

function workerOf<T>(
  name: string,
  handler: (job: Job<T>) => Promise<unknown>,
  options: WorkerOptions<T> = {},
): Worker<T> {
  const w = new Worker<T>(name, handler, {
    connection: redis.url(),
    strategy: 'wheel',
    wheel: { granularityMs: G },
    ...options,
  });
  closers.push(() => w.close({ timeoutMs: 2_000 }));
  return w;
}

function client(): ReturnType<typeof inspector> {
  const r = inspector(redis.url());
  closers.push(async () => void (await r.quit()));
  return r;
}

function wheelLayout(granularityMs = G): WheelLayout {
  return { kind: 'wheel', granularityMs, clock: new ServerClock() };
}

/** Where job `id` waits: 'ready', 'bucket <start>', 'waiting set', or null. */
async function whereIs(name: string, id: string): Promise<string | null> {
  const r = client();
  const keys = queueKeys(name);
  if ((await r.zscore(keys.waiting, id)) !== null) return 'waiting set';
  if ((await r.lpos(keys.ready, id)) !== null) return 'ready';
  for (const start of await r.zrange(keys.wheel, 0, -1)) {
    if ((await r.lpos(wheelBucketKey(keys, Number(start)), id)) !== null) return `bucket ${start}`;
  }
  return null;
}

const claimInput = (leaseMs: number, holder = 1): ClaimInput => ({
  strategy: 'wheel',
  limit: 10,
  leaseMs,
  holder,
  deadMaxCount: 1_000,
  deadMaxAgeMs: 0,
  rate: { max: 0, perMs: 0 },
  eventsCap: 1_000,
  zmscore: true,
  layout: wheelLayout(),
});

describe('wheel: every path that puts a job back puts it into the wheel, and the job runs', () => {
  it('fail with a retry delay: into the bucket of its retry time', async () => {
    const name = uniqueQueue('wheel');
    const queue = queueOf(name);
    await queue.add('x', { id: 'f', attempts: 2 });
    const r = client();
    const [job] = (await claim(r, queueKeys(name), claimInput(10_000))).jobs;
    const out = await fail(r, queueKeys(name), {
      member: job!.member,
      retryDelayMs: 1_500,
      error: { name: 'E', message: 'first' },
      deadMaxCount: 10,
      deadMaxAgeMs: 0,
      eventsCap: 1_000,
      layout: wheelLayout(),
    });
    expect(out.outcome).toBe('retry');
    const at = (out as { at: number }).at;
    expect(await whereIs(name, 'f')).toBe(`bucket ${bucketStart(at, G)}`);
    expect(await queue.counts()).toMatchObject({ scheduled: 1, due: 0, active: 0, dead: 0 });
    // Its due time is kept in wc, so get() shows it.
    expect(await client().hget(queueKeys(name).wheelCount, 'f')).toBe(String(at));
    expect((await queue.get('f'))?.runAt.getTime()).toBe(at);
    const runs: Array<{ attempt: number; claimedAt: number }> = [];
    workerOf(name, async (j) => void runs.push({ attempt: j.attempt, claimedAt: j.claimedAt.getTime() }));
    await waitFor(() => runs.length === 1, { what: 'the retry', timeoutMs: 5_000 });
    expect(runs[0]!.attempt).toBe(2);
    expect(runs[0]!.claimedAt).toBeGreaterThanOrEqual(bucketStart(at, G) + G);
    await waitFor(async () => (await queue.get('f'))?.state === 'completed', { what: 'the ack' });
  });

  it('reap of an expired lease: into ready, due now', async () => {
    const name = uniqueQueue('wheel');
    const queue = queueOf(name);
    await queue.add('x', { id: 'r', attempts: 3 });
    const r = client();
    await claim(r, queueKeys(name), claimInput(100, 7));
    await new Promise((res) => setTimeout(res, 150));
    const out = await reap(r, queueKeys(name), {
      limit: 10,
      deadMaxCount: 10,
      deadMaxAgeMs: 0,
      eventsCap: 1_000,
      layout: wheelLayout(),
    });
    expect(out).toMatchObject({ returned: 1, buried: 0 });
    expect(await whereIs(name, 'r')).toBe('ready');
    expect(await queue.counts()).toMatchObject({ scheduled: 1, due: 1, active: 0, dead: 0 });
    const attempts: number[] = [];
    workerOf(name, async (j) => void attempts.push(j.attempt));
    await waitFor(() => attempts.length === 1, { what: 'the re-run' });
    expect(attempts).toEqual([2]);
  });

  it('release at shutdown (due now) and for a newer payload version (after a delay)', async () => {
    const name = uniqueQueue('wheel');
    const queue = queueOf(name);
    await queue.addBulk([
      { payload: 1, opts: { id: 'now' } },
      { payload: 2, opts: { id: 'later' } },
    ]);
    const r = client();
    const keys = queueKeys(name);
    const { jobs } = await claim(r, keys, claimInput(10_000));
    const member = (id: string) => jobs.find((j) => j.id === id)!.member;
    const base = { eventsCap: 1_000, layout: wheelLayout() };
    expect(await release(r, keys, { member: member('now'), delayMs: 0, ...base })).toBe(true);
    expect(await release(r, keys, { member: member('later'), delayMs: 1_200, ...base })).toBe(true);
    expect(await whereIs(name, 'now')).toBe('ready');
    expect(await whereIs(name, 'later')).toMatch(/^bucket /);
    const done: string[] = [];
    workerOf(name, async (j) => void done.push(`${j.id}:${j.attempt}`));
    await waitFor(() => done.length === 2, { what: 'both released jobs', timeoutMs: 5_000 });
    expect(done).toEqual(['now:1', 'later:1']);
  });

  it('a worker that meets a newer payload version hands the job back into the wheel', async () => {
    const name = uniqueQueue('wheel');
    const queue = new Queue<number>(name, {
      connection: redis.url(),
      strategy: 'wheel',
      version: 2,
    });
    closers.push(() => queue.close());
    await queue.add(1, { id: 'v2' });
    const errors: Error[] = [];
    const old = workerOf(name, async () => {}, { version: 1, newerVersionDelay: 1_500 });
    old.on('error', (err) => errors.push(err));
    await waitFor(() => errors.length === 1, { what: 'the deferral' });
    await old.close();
    expect(await whereIs(name, 'v2')).toMatch(/^bucket /);
    expect((await queue.get('v2'))?.attempts).toBe(0);
    const ran: number[] = [];
    workerOf<number>(name, async (j) => void ran.push(j.payload), { version: 2 });
    await waitFor(() => ran.length === 1, { what: 'the upgraded run', timeoutMs: 5_000 });
  });

  it('dead.retry: into ready; reschedule: into the new bucket', async () => {
    const name = uniqueQueue('wheel');
    const queue = queueOf(name);
    let failing = true;
    const done: string[] = [];
    const w = workerOf(name, async (j) => {
      if (failing) throw new Error('down');
      done.push(j.id);
    });
    await queue.add('x', { id: 'd', attempts: 1 });
    await waitFor(async () => (await queue.counts()).dead === 1, { what: 'dead' });
    await w.close();
    expect(await queue.dead.retry('d')).toBe(1);
    expect(await whereIs(name, 'd')).toBe('ready');
    await queue.add('y', { id: 'm', delay: '1h' });
    expect(await queue.reschedule('m', { delay: 1_200 })).toBe(true);
    const info = await queue.get('m');
    expect(await whereIs(name, 'm')).toBe(`bucket ${bucketStart(info!.runAt.getTime(), G)}`);
    expect(await client().hget(queueKeys(name).wheelCount, 'm')).toBe(String(info!.runAt.getTime()));
    failing = false;
    workerOf(name, async (j) => void done.push(j.id));
    await waitFor(() => done.length === 2, { what: 'both', timeoutMs: 5_000 });
    expect(done).toEqual(['d', 'm']);
  });
});

describe('wheel: layout and protocol', () => {
  it('a script that needs a bucket the caller did not expect says so before writing; the wrapper retries', async () => {
    const name = uniqueQueue('wheel');
    const r = client();
    const keys = queueKeys(name);
    // A clock estimate that has never seen the server: every guess of "now + delay" is wrong.
    const layout = wheelLayout();
    const record = encodeRecord(NEW_JOB_HEADER, Buffer.from('{}'));
    const [out] = await add(
      r,
      keys,
      [{ id: 'w', when: { delay: 60_000 }, record, priority: 0, mode: 'keep' }],
      0,
      layout,
    );
    expect(out!.created).toBe(true);
    expect(await whereIs(name, 'w')).toBe(`bucket ${bucketStart(out!.runAt, G)}`);
    // The reply's clock is now known: the estimate is within a few ms of the server's.
    expect(Math.abs(layout.clock.now() - (await serverNow(r)))).toBeLessThan(200);
    expect(await r.hgetall(keys.wheelCount)).toEqual({ w: String(out!.runAt) });
  });

  it("a bucket's jobs run in due order once its end has passed, each with its own due time", async () => {
    const name = uniqueQueue('wheel');
    const queue = queueOf<string>(name);
    const r = client();
    const keys = queueKeys(name);
    const start = bucketStart((await serverNow(r)) + 2 * G, G);
    // Put in the reverse of their due order: the bucket list holds them as put.
    for (const [id, offset] of [
      ['c', 900],
      ['a', 100],
      ['b', 500],
    ] as const) {
      await queue.add(id, { id, runAt: start + offset });
    }
    expect(await r.lrange(wheelBucketKey(keys, start), 0, -1)).toEqual(['c', 'a', 'b']);
    await waitFor(async () => (await serverNow(r)) >= start + G, {
      what: 'the bucket end',
      timeoutMs: 5_000,
    });
    // A claim that does not pass the due bucket leaves it, and says so and which to pass.
    const blind = await claim(r, keys, claimInput(10_000));
    expect(blind.jobs).toEqual([]);
    expect(blind.wheel).toEqual({ readyLeft: 0, dueLeft: true, head: [start] });
    const { jobs, wheel } = await claim(r, keys, { ...claimInput(10_000), buckets: blind.wheel!.head });
    expect(jobs.map((j) => [j.id, j.runAt])).toEqual([
      ['a', start + 100],
      ['b', start + 500],
      ['c', start + 900],
    ]);
    expect(jobs.map((j) => j.header.runDue)).toEqual([start + 100, start + 500, start + 900]);
    expect(wheel).toEqual({ readyLeft: 0, dueLeft: false, head: [] });
    expect(await r.exists(keys.ready, keys.wheel, keys.wheelCount, wheelBucketKey(keys, start))).toBe(0);
  });

  it('refuses a priority, naming it and the strategy, writing nothing', async () => {
    const name = uniqueQueue('wheel');
    const queue = queueOf<string>(name);
    const refused = await queue.add('x', { priority: 5 }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).message).toMatch(/priority.*wheel strategy/);
    expect(await queue.counts()).toMatchObject({ scheduled: 0 });
  });

  it('Queue and Worker of different layouts refuse each other, naming both', async () => {
    const name = uniqueQueue('wheel');
    const wheelQueue = queueOf(name);
    await wheelQueue.add('x', { delay: '1h' });
    const zsetWorker = new Worker(name, async () => {}, { connection: redis.url(), strategy: 'zpopmin' });
    zsetWorker.on('error', () => {});
    closers.push(() => zsetWorker.close());
    const failure = await zsetWorker.waitUntilReady().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(LayoutMismatchError);
    expect((failure as Error).message).toMatch(/layout 'wheel:1000'.*uses 'zset'/);

    const zsetQueue = new Queue(name, { connection: redis.url(), strategy: 'range' });
    closers.push(() => zsetQueue.close());
    await expect(zsetQueue.add('y')).rejects.toBeInstanceOf(LayoutMismatchError);
    const otherGranularity = queueOf(name, 500);
    await expect(otherGranularity.add('z')).rejects.toThrow(/'wheel:1000'.*'wheel:500'/);
    // A Queue with strategy 'auto' adopts the queue's layout and can read and change it.
    const auto = new Queue(name, { connection: redis.url() });
    closers.push(() => auto.close());
    expect(await auto.counts()).toMatchObject({ scheduled: 1, due: 0, active: 0, dead: 0 });

    // And the other way round: a zset queue refuses a wheel worker.
    const zname = uniqueQueue('zset');
    const zq = new Queue(zname, { connection: redis.url(), strategy: 'zpopmin' });
    closers.push(() => zq.close());
    await zq.add('x', { delay: '1h' });
    const ww = new Worker(zname, async () => {}, { connection: redis.url(), strategy: 'wheel' });
    ww.on('error', () => {});
    closers.push(() => ww.close());
    await expect(ww.waitUntilReady()).rejects.toThrow(/layout 'zset'.*uses 'wheel:1000'/);
  });

  it('jobs written into the waiting ZSET by a producer that does not know the wheel are not stranded', async () => {
    const name = uniqueQueue('wheel');
    const ran: string[] = [];
    const w = workerOf(name, async (j) => void ran.push(j.id));
    await w.waitUntilReady();
    const r = client();
    const keys = queueKeys(name);
    const now = await serverNow(r);
    await r.hset(keys.records, 'stray', encodeRecord(NEW_JOB_HEADER, jsonCodec.encodePayload(1)));
    await r.zadd(keys.waiting, now + 100, 'stray');
    await r.publish(keys.wake, String(now + 100));
    await waitFor(() => ran.includes('stray'), { what: 'the stray job', timeoutMs: 3_000 });
  });
});

describe('wheel: jobs in the waiting ZSET (another producer, or delayq migrate)', () => {
  it("are cancelled, rescheduled into the wheel, and shown, like the wheel's own", async () => {
    const name = uniqueQueue('wheel');
    const queue = queueOf<number>(name);
    const r = client();
    const keys = queueKeys(name);
    const later = (await serverNow(r)) + 3_600_000;
    for (const id of ['gone', 'moved']) {
      await r.hset(keys.records, id, encodeRecord(NEW_JOB_HEADER, jsonCodec.encodePayload(1)));
      await r.zadd(keys.waiting, later, id);
    }
    expect((await queue.get('moved'))?.runAt.getTime()).toBe(later);
    expect(await queue.cancel('gone')).toBe(true);
    expect((await queue.get('gone'))?.state).toBe('cancelled');
    expect(await queue.reschedule('moved', { delay: 60_000 })).toBe(true);
    const due = (await queue.get('moved'))!.runAt.getTime();
    expect(await whereIs(name, 'moved')).toBe(`bucket ${bucketStart(due, G)}`);
    expect(await r.zcard(keys.waiting)).toBe(0);
  });
});

describe('wheel: lateness', () => {
  for (const granularityMs of [250, 1_000]) {
    it(`is never early and late by about one granularity at most (${granularityMs} ms buckets)`, async () => {
      const name = uniqueQueue('late');
      const queue = queueOf<number>(name, granularityMs);
      const late: number[] = [];
      const w = new Worker<number>(
        name,
        async (j) => void late.push(j.claimedAt.getTime() - j.runAt.getTime()),
        {
          connection: redis.url(),
          strategy: 'wheel',
          wheel: { granularityMs },
          concurrency: 20,
        },
      );
      closers.push(() => w.close({ timeoutMs: 2_000 }));
      await w.waitUntilReady();
      const n = 60;
      const spreadMs = 3_000;
      for (let i = 0; i < n; i++) await queue.add(i, { delay: 50 + Math.floor(Math.random() * spreadMs) });
      await waitFor(() => late.length === n, {
        what: `${n} runs`,
        timeoutMs: spreadMs + granularityMs + 10_000,
      });
      late.sort((a, b) => a - b);
      const p = (q: number) => late[Math.min(n - 1, Math.floor(q * n))]!;
      console.log(
        `wheel lateness, ${granularityMs} ms buckets, ${n} jobs: min ${late[0]} p50 ${p(0.5)} p90 ${p(0.9)} p99 ${p(0.99)} max ${late[n - 1]} ms`,
      );
      expect(late[0]).toBeGreaterThanOrEqual(0);
      // One granularity by design, plus generous room for a loaded CI machine.
      expect(late[n - 1]).toBeLessThanOrEqual(granularityMs + 500);
      // Spread over the bucket, not all at its worst: the median is well inside one granularity.
      expect(p(0.5)).toBeLessThan(granularityMs);
    });
  }
});

describe('wheel on a server without BLMOVE', () => {
  const old = useRedis({ args: ['--rename-command', 'BLMOVE', ''] });
  it('waits with BRPOPLPUSH instead, and is woken by a job pushed to ready', async () => {
    const name = uniqueQueue('brpoplpush');
    const queue = new Queue(name, { connection: old.url(), strategy: 'wheel' });
    closers.push(() => queue.close());
    const ran: Array<{ runAt: number; claimedAt: number }> = [];
    const w = new Worker(
      name,
      async (j) => void ran.push({ runAt: j.runAt.getTime(), claimedAt: j.claimedAt.getTime() }),
      {
        connection: old.url(),
        strategy: 'wheel',
        maxSleepMs: 3_600_000,
      },
    );
    closers.push(() => w.close({ timeoutMs: 2_000 }));
    await w.waitUntilReady();
    expect(w.strategy).toBe('wheel');
    await new Promise((r) => setTimeout(r, 100));
    await queue.add('now');
    await waitFor(() => ran.length === 1, { what: 'the run', timeoutMs: 3_000 });
    // Due now goes straight to ready: the blocked BRPOPLPUSH returns at once, no timer involved.
    expect(ran[0]!.claimedAt - ran[0]!.runAt).toBeLessThan(500);
  });
});
