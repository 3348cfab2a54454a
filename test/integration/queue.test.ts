import { afterEach, describe, expect, it } from 'vitest';
import {
  PayloadTooLargeError,
  Queue,
  ValidationError,
  EncodeError,
  Worker,
  type QueueOptions,
} from '../../src/index.js';
import { configKey, queueKeys } from '../../src/redis/keys.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const open: Array<Queue<unknown>> = [];

function newQueue<T>(options: QueueOptions<T> = {}): Queue<T> {
  const queue = new Queue<T>(uniqueQueue(), { connection: redis.url(), ...options });
  open.push(queue);
  return queue;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((q) => q.close()));
});

/**
 * Every job key of the queue that exists, with its type and size: to assert nothing else was
 * written. The config record is left out: it is the queue's definition, recorded by its first client
 * before any job is looked at.
 */
async function snapshot(name: string): Promise<Record<string, number>> {
  const r = inspector(redis.url());
  const out: Record<string, number> = {};
  const config = configKey(name);
  for (const key of Object.values(queueKeys(name)).filter((k) => k !== config)) {
    const type = await r.type(key);
    if (type === 'zset') out[key] = await r.zcard(key);
    else if (type === 'hash') out[key] = await r.hlen(key);
    else if (type === 'string') out[key] = 1;
  }
  await r.quit();
  return out;
}

describe('Queue.add', () => {
  it('schedules a delayed job counted from the Redis clock and returns its due time', async () => {
    const queue = newQueue<{ to: string }>();
    const r = inspector(redis.url());
    const before = await serverNow(r);
    const job = await queue.add({ to: 'a@b.c' }, { delay: '90s' });
    const after = await serverNow(r);
    expect(job.created).toBe(true);
    expect(job.runAt.getTime()).toBeGreaterThanOrEqual(before + 90_000);
    expect(job.runAt.getTime()).toBeLessThanOrEqual(after + 90_000);
    const keys = queueKeys(queue.name);
    expect(Number(await r.zscore(keys.waiting, job.id))).toBe(job.runAt.getTime());
    // The record: format 1, no optional field (no attempt made, the default 3 attempts, no
    // priority), then the payload as the codec wrote it (docs/ARCHITECTURE.md §3.2).
    expect(await r.hgetBuffer(keys.records, job.id)).toEqual(
      Buffer.concat([Buffer.from([0x01, 0x00]), Buffer.from('{"to":"a@b.c"}')]),
    );
    await r.quit();
  });

  it('reads duration strings and runAt dates', async () => {
    const queue = newQueue();
    const r = inspector(redis.url());
    const now = await serverNow(r);
    await r.quit();
    const a = await queue.add(1, { delay: '1h30m' });
    expect(a.runAt.getTime() - now).toBeGreaterThanOrEqual(5_400_000);
    expect(a.runAt.getTime() - now).toBeLessThan(5_400_000 + 5_000);
    const at = new Date(Date.UTC(2030, 0, 1));
    expect((await queue.add(2, { runAt: at })).runAt).toEqual(at);
    expect((await queue.add(3, { runAt: at.getTime() + 1 })).runAt.getTime()).toBe(at.getTime() + 1);
  });

  it('adding an existing id writes nothing and returns the existing job', async () => {
    const queue = newQueue<string>();
    const first = await queue.add('first', { id: 'welcome:42', delay: '1h' });
    const before = await snapshot(queue.name);
    const second = await queue.add('second', { id: 'welcome:42', delay: '1m' });
    expect(second).toEqual({ id: 'welcome:42', runAt: first.runAt, created: false });
    expect(await snapshot(queue.name)).toEqual(before);
    expect((await queue.get('welcome:42'))?.payload).toBe('first');
  });

  it.each([
    [{ delay: -1 }, /delay must be a finite number of milliseconds >= 0/],
    [{ delay: Number.NaN }, /delay must be a finite number/],
    [{ delay: '10 parsecs' }, /delay: cannot read/],
    [{ delay: '5y' }, /delay: cannot read/],
    [{ runAt: 'tomorrow' }, /runAt must be a valid Date or epoch milliseconds/],
    [{ runAt: new Date('nope') }, /runAt must be a valid Date/],
    [{ attempts: 0 }, /attempts must be a whole number from 1 to 65535, got /],
    [{ attempts: 1.5 }, /attempts must be a whole number from 1 to 65535, got /],
    [{ delay: 1, runAt: Date.now() }, /either delay or runAt/],
    [{ id: '' }, /id must be a non-empty string/],
    [{ backoff: { type: 'linear', delay: 1 } }, /backoff must be/],
    [{ dealy: 5 }, /unknown add option 'dealy'/],
  ])('rejects bad options %j with a clear ValidationError and writes nothing', async (opts, message) => {
    const queue = newQueue();
    // @ts-expect-error -- deliberately wrong options
    const attempt = queue.add({ ok: true }, opts);
    await expect(attempt).rejects.toThrow(ValidationError);
    await expect(attempt).rejects.toThrow(message);
    expect(await snapshot(queue.name)).toEqual({});
  });

  it('rejects a payload the codec cannot represent, and an oversized one, writing nothing', async () => {
    const queue = newQueue<unknown>({ maxPayloadBytes: 1_000 });
    await expect(queue.add({ callback: () => 1 })).rejects.toThrow(EncodeError);
    const huge = await queue.add('x'.repeat(2_000)).catch((e: unknown) => e);
    expect(huge).toBeInstanceOf(PayloadTooLargeError);
    expect((huge as PayloadTooLargeError).message).toMatch(/over the limit of 1000 bytes/);
    expect(await snapshot(queue.name)).toEqual({});
  });

  it('enforces the 1 MiB default limit', async () => {
    const queue = newQueue<string>();
    await expect(queue.add('x'.repeat(1024 * 1024))).rejects.toThrow(PayloadTooLargeError);
    await expect(queue.add('x'.repeat(1000 * 1000))).resolves.toMatchObject({ created: true });
  });
});

describe('Queue.addBulk', () => {
  it('adds many jobs; a bad one fails the call with nothing written', async () => {
    const queue = newQueue<number>();
    const results = await queue.addBulk(
      Array.from({ length: 1_200 }, (_, i) => ({ payload: i, opts: { delay: 60_000 + i, id: `j${i}` } })),
    );
    expect(results).toHaveLength(1_200);
    expect(results.every((r) => r.created)).toBe(true);
    expect(results[7]?.id).toBe('j7');
    expect((await queue.counts()).scheduled).toBe(1_200);

    const other = newQueue<number>();
    const attempt = other.addBulk([{ payload: 1 }, { payload: 2, opts: { delay: -5 } }]);
    await expect(attempt).rejects.toThrow(/job 1: delay must be/);
    expect(await snapshot(other.name)).toEqual({});
  });

  it('reports duplicates inside and across batches', async () => {
    const queue = newQueue<number>();
    const results = await queue.addBulk([
      { payload: 1, opts: { id: 'a' } },
      { payload: 2, opts: { id: 'a', delay: '1h' } },
      { payload: 3, opts: { id: 'b' } },
    ]);
    expect(results.map((r) => r.created)).toEqual([true, false, true]);
    // The duplicate reports the due time of the job written moments before in the same call.
    expect(results[1]!.runAt).toEqual(results[0]!.runAt);
  });
});

describe('get, cancel, reschedule, counts', () => {
  it('get returns the job with its state, or null', async () => {
    const queue = newQueue<{ at: Date; big: bigint }>();
    const at = new Date('2026-01-02T03:04:05.006Z');
    const { id, runAt } = await queue.add({ at, big: 2n ** 70n }, { delay: '1m', attempts: 5 });
    const info = await queue.get(id);
    expect(info).toMatchObject({
      id,
      state: 'scheduled',
      runAt,
      attempts: 0,
      maxAttempts: 5,
      lastError: null,
      lease: null,
    });
    expect(info?.payload?.at).toEqual(at);
    expect(info?.payload?.big).toBe(2n ** 70n);
    expect(await queue.get('nope')).toBeNull();
  });

  it('cancel removes a waiting job and every trace of it but its cancelled record', async () => {
    const queue = newQueue();
    const { id } = await queue.add('x', { delay: '1m' });
    await queue.add('y', { delay: '1m', id: 'keep' });
    expect(await queue.cancel(id)).toBe(true);
    expect(await queue.cancel(id)).toBe(false);
    expect((await queue.get(id))?.state).toBe('cancelled');
    const keys = queueKeys(queue.name);
    // 'keep' waits; the cancelled id keeps only its 3-byte cancelled record and its x entry; the
    // counters hold `added` and `cancelled`. (The config record is the queue's, not the jobs'.)
    const state = Object.entries(await snapshot(queue.name)).filter(([key]) => key !== keys.config);
    expect(Object.fromEntries(state)).toEqual({
      [keys.waiting]: 1,
      [keys.records]: 2,
      [keys.cancelled]: 1,
      [keys.counters]: 2,
    });
    const r = inspector(redis.url());
    expect(await r.hgetBuffer(keys.records, id)).toEqual(Buffer.from([0x01, 0x80, 0x10]));
    await r.quit();
  });

  it('reschedule moves a waiting job; not an unknown one', async () => {
    const queue = newQueue();
    const { id } = await queue.add('x', { delay: '1h' });
    expect(await queue.reschedule(id, { delay: '2h' })).toBe(true);
    const r = inspector(redis.url());
    const now = await serverNow(r);
    await r.quit();
    const runAt = (await queue.get(id))?.runAt.getTime() ?? 0;
    expect(runAt - now).toBeGreaterThan(7_190_000);
    expect(runAt - now).toBeLessThanOrEqual(7_200_000);
    expect(await queue.reschedule('unknown', { delay: 1 })).toBe(false);
    await expect(queue.reschedule(id, {})).rejects.toThrow(ValidationError);
  });

  it('counts scheduled, due, active, dead, completed and cancelled', async () => {
    const queue = newQueue();
    await queue.addBulk([
      { payload: 1, opts: { delay: 0 } },
      { payload: 2, opts: { runAt: Date.UTC(2020, 0, 1) } },
      { payload: 3, opts: { delay: '1h' } },
    ]);
    expect(await queue.counts()).toEqual({
      scheduled: 3,
      due: 2,
      held: 0,
      active: 0,
      dead: 0,
      completed: 0,
      cancelled: 0,
      waitingChildren: 0,
    });
  });

  it('refuses calls after close', async () => {
    const queue = newQueue();
    await queue.close();
    await expect(queue.add(1)).rejects.toThrow(/is closed/);
  });
});

describe('dead letters', () => {
  it("retry('all') is the job whose id is 'all'; retryAll() retries every dead job", async () => {
    const queue = newQueue<number>();
    await queue.addBulk(['all', 'b', 'c'].map((id, n) => ({ payload: n, opts: { id, attempts: 1 } })));
    const worker = new Worker<number>(
      queue.name,
      async () => {
        throw new Error('down');
      },
      { connection: redis.url(), autorun: false },
    );
    await worker.run();
    await waitFor(async () => (await queue.counts()).dead === 3, { what: '3 dead jobs' });
    await worker.close();

    expect(await queue.dead.retry('all')).toBe(1);
    expect((await queue.get('all'))?.state).toBe('scheduled');
    expect((await queue.get('b'))?.state).toBe('dead');
    // No dead job 'all' now: the old meaning ("every dead job") is refused, naming the new call.
    const refused = await queue.dead.retry('all').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).message).toMatch(/dead\.retryAll\(\)/);
    expect(await queue.dead.retry('b')).toBe(1);
    expect(await queue.dead.retry('b')).toBe(0);

    const progress: number[] = [];
    expect(await queue.dead.retryAll({ onProgress: (n) => progress.push(n) })).toBe(1);
    expect(progress).toEqual([1]);
    expect(await queue.counts()).toMatchObject({ scheduled: 3, dead: 0 });
  });
});
