/**
 * The event stream (failure events always, routine ones with `only: 'all'`), the shared rate
 * limit, and per-job timeouts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, Worker, type JobEvent, type WorkerOptions } from '../../src/index.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { internals } from '../support/internals.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

function queue<T>(name: string): Queue<T> {
  const q = new Queue<T>(name, { connection: redis.url() });
  closers.push(() => q.close());
  return q;
}

function worker<T>(
  name: string,
  handler: ConstructorParameters<typeof Worker<T>>[1],
  options: WorkerOptions<T> = {},
): Worker<T> {
  const w = new Worker<T>(name, handler, { connection: redis.url(), ...options });
  closers.push(() => w.close({ timeoutMs: 1_000 }));
  return w;
}

/** Every event kept for the queue, oldest first. */
async function allEvents(q: Queue<unknown>, count: number): Promise<JobEvent[]> {
  const out: JobEvent[] = [];
  for await (const event of q.events({ from: '0', blockMs: 100 })) {
    out.push(event);
    if (out.length === count) break;
  }
  return out;
}

/** Every event, routine ones included: the option a queue and its workers must agree on. */
const ALL = { maxLen: 1_000, only: 'all' } as const;

function queueWithAll<T>(name: string): Queue<T> {
  const q = new Queue<T>(name, { connection: redis.url(), events: ALL });
  closers.push(() => q.close());
  return q;
}

describe("events: { only: 'all' }", () => {
  it('records each step of a job’s life, with attempts', async () => {
    const name = uniqueQueue('ev');
    const q = queueWithAll<string>(name);
    const w = worker<string>(
      name,
      async (job) => {
        if (job.payload === 'flaky' && job.attempt === 1) throw new Error('first try fails');
        if (job.payload === 'doomed') throw new Error('always fails');
      },
      { backoff: { type: 'fixed', delay: 10 }, events: ALL },
    );
    await w.waitUntilReady();
    await q.add('flaky', { id: 'flaky' });
    await q.add('doomed', { id: 'doomed', attempts: 1 });
    await q.add('later', { id: 'later', delay: '1h' });
    await q.reschedule('later', { delay: '2h' });
    await q.cancel('later');
    await waitFor(async () => (await q.get('doomed'))?.state === 'dead', { what: "'doomed' to die" });
    await waitFor(async () => (await q.get('flaky'))?.state === 'completed', { what: "'flaky' to complete" });
    const events = await allEvents(q, Number(await internals(q).client.xlen(internals(q).keys.events)));
    const of = (id: string) => events.filter((e) => e.jobId === id).map((e) => e.type);
    expect(of('flaky')).toEqual(['added', 'claimed', 'failed', 'claimed', 'completed']);
    expect(of('doomed').slice(0, 2)).toEqual(['added', 'claimed']);
    expect(of('doomed').at(-1)).toBe('dead');
    expect(of('later')).toEqual(['added', 'rescheduled', 'cancelled']);
    const failed = events.find((e) => e.jobId === 'flaky' && e.type === 'failed');
    expect(failed?.fields).toMatchObject({ attempt: '1' });
    for (const e of events) expect(e.at).toBeGreaterThan(1_700_000_000_000);
  });

  it('resumes from a stream id with nothing missed and nothing repeated', async () => {
    const name = uniqueQueue('ev');
    const q = queueWithAll<number>(name);
    await q.addBulk(
      Array.from({ length: 5 }, (_, i) => ({ payload: i, opts: { id: `a${i}`, delay: '1h' } })),
    );
    const first = await allEvents(q, 3);
    expect(first.map((e) => e.jobId)).toEqual(['a0', 'a1', 'a2']);
    await q.addBulk(
      Array.from({ length: 5 }, (_, i) => ({ payload: i, opts: { id: `b${i}`, delay: '1h' } })),
    );
    const rest: JobEvent[] = [];
    const stop = new AbortController();
    for await (const e of q.events({ from: first[2]!.streamId, signal: stop.signal, blockMs: 100 })) {
      rest.push(e);
      if (rest.length === 7) stop.abort();
    }
    expect(rest.map((e) => e.jobId)).toEqual(['a3', 'a4', 'b0', 'b1', 'b2', 'b3', 'b4']);
  });

  it('a live reader sees events written after it started', async () => {
    const name = uniqueQueue('ev');
    const q = queueWithAll<number>(name);
    await q.add(0, { id: 'before', delay: '1h' });
    const seen: string[] = [];
    const stop = new AbortController();
    const reading = (async () => {
      for await (const e of q.events({ signal: stop.signal, blockMs: 50 })) seen.push(e.jobId);
    })();
    await new Promise((r) => setTimeout(r, 100));
    await q.add(1, { id: 'after', delay: '1h' });
    await waitFor(() => seen.length === 1);
    stop.abort();
    await reading;
    expect(seen).toEqual(['after']);
  });
});

describe('events by default: failures only', () => {
  it('writes failed, dead and cancelled, and none of the routine events', async () => {
    const name = uniqueQueue('ev');
    const q = queue<number>(name);
    await q.addBulk([
      { payload: 1, opts: { id: 'fine' } },
      { payload: 2, opts: { id: 'flaky', attempts: 2, backoff: { type: 'fixed', delay: 10 } } },
      { payload: 3, opts: { id: 'broken', attempts: 1 } },
    ]);
    await q.add(4, { id: 'cancelled', delay: '1h' });
    await q.reschedule('cancelled', { delay: '2h' });
    await q.cancel('cancelled');
    worker<number>(name, async (job) => {
      if (job.payload === 3 || (job.payload === 2 && job.attempt === 1)) throw new Error('no');
    });
    await waitFor(async () => (await q.get('fine'))?.state === 'completed', { what: "'fine' to complete" });
    await waitFor(async () => (await q.get('flaky'))?.state === 'completed', { what: "'flaky' to complete" });
    await waitFor(async () => (await q.get('broken'))?.state === 'dead', { what: "'broken' to die" });
    const events = await allEvents(q, Number(await internals(q).client.xlen(internals(q).keys.events)));
    const of = (id: string) => events.filter((e) => e.jobId === id).map((e) => e.type);
    expect(of('fine')).toEqual([]);
    expect(of('flaky')).toEqual(['failed']);
    expect(of('broken').at(-1)).toBe('dead');
    expect(of('cancelled')).toEqual(['cancelled']);
    const routine = ['added', 'claimed', 'completed', 'released', 'rescheduled', 'retried'];
    expect(events.filter((e) => routine.includes(e.type))).toEqual([]);
  });

  it('events: false writes no stream', async () => {
    const name = uniqueQueue('ev');
    const q = new Queue(name, { connection: redis.url(), events: false });
    closers.push(() => q.close());
    await q.add(1, { attempts: 1 });
    await q.add(2, { id: 'x', delay: '1h' });
    await q.cancel('x');
    expect(await internals(q).client.exists(internals(q).keys.events)).toBe(0);
  });

  it('the option is checked: only is all or failures', () => {
    expect(
      () =>
        new Queue('x', {
          connection: redis.url(),
          events: { maxLen: 10, only: 'some' as 'all' },
        }),
    ).toThrow(/only\?: 'all' \| 'failures'/);
  });
});

describe('rate limit', () => {
  it('two workers together start at most max jobs per window, in due order', async () => {
    const name = uniqueQueue('rate');
    const q = queue<number>(name);
    const starts: Array<{ n: number; at: number }> = [];
    const handler = async (job: { payload: number; claimedAt: Date }) =>
      void starts.push({ n: job.payload, at: job.claimedAt.getTime() });
    worker<number>(name, handler, { concurrency: 10, limit: { max: 5, per: 200 } });
    worker<number>(name, handler, { concurrency: 10, limit: { max: 5, per: 200 } });
    await q.addBulk(
      Array.from({ length: 20 }, (_, i) => ({ payload: i, opts: { runAt: Date.UTC(2020, 0, 1) + i } })),
    );
    await waitFor(() => starts.length === 20, { what: '20 starts' });
    const times = starts.map((s) => s.at).sort((a, b) => a - b);
    // Sliding window: any 5 + 1 consecutive starts span at least the window.
    for (let i = 5; i < times.length; i++) expect(times[i]! - times[i - 5]!).toBeGreaterThanOrEqual(200);
    // Held-back jobs start in due order, window by window.
    const byWindow = [...starts].sort((a, b) => a.at - b.at).map((s) => s.n);
    for (let i = 5; i < byWindow.length; i++)
      expect(Math.min(...byWindow.slice(i))).toBeGreaterThanOrEqual(
        Math.max(...byWindow.slice(0, i - 5 + 1)) - 4,
      );
    // And not much slower than the limit allows: 20 jobs at 5 per 200 ms take about 600 ms.
    expect(times.at(-1)! - times[0]!).toBeLessThan(2_000);
  });

  it('rejects a bad limit', () => {
    expect(() => new Worker('x', async () => {}, { limit: { max: 0, per: '1s' }, autorun: false })).toThrow(
      /limit.max/,
    );
    expect(() => new Worker('x', async () => {}, { limit: { max: 1, per: 'soon' }, autorun: false })).toThrow(
      /limit.per/,
    );
  });
});

describe('timeouts', () => {
  it('a job over its timeoutMs has its signal aborted, is retried, then dead with "timed out"', async () => {
    const name = uniqueQueue('timeout');
    const q = queue<string>(name);
    const aborted: string[] = [];
    const dead: string[] = [];
    const failed: string[] = [];
    const w = worker<string>(
      name,
      async (job) => {
        await new Promise<void>((resolve) => {
          job.signal.addEventListener('abort', () => {
            aborted.push(String((job.signal.reason as Error).message));
            resolve();
          });
        });
      },
      { backoff: { type: 'fixed', delay: 10 } },
    );
    w.on('failed', (_job, err) => failed.push(err.message));
    w.on('dead', (_job, err) => dead.push(err.message));
    const { id } = await q.add('slow', { timeoutMs: 100, attempts: 2 });
    await waitFor(() => dead.length === 1, { what: 'the dead job' });
    expect(aborted).toHaveLength(2);
    expect(aborted[0]).toMatch(/^timed out/);
    expect(failed).toEqual([expect.stringMatching(/^timed out/)]);
    expect(dead[0]).toMatch(/^timed out: job .* ran longer than its timeoutMs of 100 ms/);
    expect(await q.get(id)).toMatchObject({
      state: 'dead',
      attempts: 2,
      lastError: { name: 'JobTimeoutError' },
    });
  });

  it('a job within its timeout completes normally', async () => {
    const name = uniqueQueue('timeout');
    const q = queue<string>(name);
    const done: string[] = [];
    const w = worker<string>(name, async () => new Promise((r) => setTimeout(r, 20)));
    w.on('completed', (job) => done.push(job.id));
    const { id } = await q.add('quick', { timeoutMs: 2_000 });
    await waitFor(() => done.length === 1);
    expect(done).toEqual([id]);
  });
});
