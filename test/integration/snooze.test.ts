/**
 * SnoozeError: a handler defers its job (a receiver's 429 Retry-After) without spending an
 * attempt. The job is due again after the delay, never earlier, its attempt uncounted; the queue's
 * `snoozed` counter and event and the worker's `snoozed` event say so. For single jobs and batches.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, SnoozeError, ValidationError, Worker } from '../../src/index.js';
import type { JobEvent } from '../../src/events.js';
import { DelayqMetrics } from '../../src/metrics/metrics.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function openQueue(name: string): Queue<string> {
  const queue = new Queue<string>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  return queue;
}

/** The queue's events so far (failures and snoozes are written by default). */
async function eventsOf(queue: Queue<string>): Promise<JobEvent[]> {
  const out: JobEvent[] = [];
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 300);
  for await (const event of queue.events({ from: '0', blockMs: 50, signal: stop.signal })) out.push(event);
  clearTimeout(timer);
  return out;
}

describe('SnoozeError', () => {
  it('a job of 1 attempt snoozed twice still completes: no attempt counted, due again after the delay', async () => {
    const name = uniqueQueue('snooze');
    const queue = openQueue(name);
    const runs: Array<{ attempt: number; at: number; runAt: number }> = [];
    const snoozed: Array<{ id: string; runAt: number; delayMs: number }> = [];
    const worker = new Worker<string, string>(
      name,
      async (job) => {
        runs.push({ attempt: job.attempt, at: Date.now(), runAt: job.runAt.getTime() });
        if (runs.length <= 2) throw new SnoozeError(runs.length === 1 ? 150 : '200ms');
        return 'delivered';
      },
      { connection: redis.url() },
    );
    worker.on('snoozed', (job, runAt, delayMs) =>
      snoozed.push({ id: job.id, runAt: runAt.getTime(), delayMs }),
    );
    closers.push(() => worker.close({ timeoutMs: 2_000 }));
    const { id } = await queue.add('hook', { attempts: 1 });
    await waitFor(async () => (await queue.get(id))?.state === 'completed', { what: 'the job to complete' });

    // Every run was attempt 1: with attempts: 1 a counted snooze would have buried the job.
    expect(runs.map((r) => r.attempt)).toEqual([1, 1, 1]);
    expect(await queue.get(id)).toMatchObject({ state: 'completed', attempts: 1, maxAttempts: 1 });
    // Due again after the delay: each run's due time is at least the delay after the one before
    // (the snooze counts from when the attempt ended, by the Redis clock), and never started early.
    expect(runs[1]!.runAt - runs[0]!.runAt).toBeGreaterThanOrEqual(150);
    expect(runs[2]!.runAt - runs[1]!.runAt).toBeGreaterThanOrEqual(200);
    expect(runs[1]!.at - runs[0]!.at).toBeGreaterThanOrEqual(140);
    expect(snoozed.map((s) => [s.id, s.delayMs])).toEqual([
      [id, 150],
      [id, 200],
    ]);

    const c = inspector(redis.url());
    closers.push(async () => void (await c.quit()));
    expect(await c.hget(queueKeys(name).counters, 'snoozed')).toBe('2');
    expect(await c.hget(queueKeys(name).counters, 'failed')).toBeNull();
    // The same total in /metrics, read from Redis by any process.
    const metrics = new DelayqMetrics();
    metrics.observeQueue(queue);
    expect(await metrics.registry.metrics()).toContain(`delayq_snoozed_total{queue="${name}"} 2`);
    const events = await eventsOf(queue);
    const snoozes = events.filter((e) => e.type === 'snoozed');
    expect(snoozes.map((e) => [e.jobId, e.fields.attempt])).toEqual([
      [id, '1'],
      [id, '1'],
    ]);
    expect(Number(snoozes[1]!.fields.runAt)).toBe(runs[2]!.runAt);
    expect(events.filter((e) => e.type === 'failed' || e.type === 'dead')).toEqual([]);
  });

  it('a batch handler that throws a SnoozeError snoozes every job of the batch', async () => {
    const name = uniqueQueue('snooze-batch');
    const queue = openQueue(name);
    const batches: Array<Array<[string, number]>> = [];
    const worker = new Worker<string>(
      name,
      async (jobs) => {
        batches.push(jobs.map((j) => [j.payload, j.attempt]));
        if (batches.length === 1) throw new SnoozeError('100ms');
      },
      { connection: redis.url(), batch: { size: 10, waitMs: 50 } },
    );
    closers.push(() => worker.close({ timeoutMs: 2_000 }));
    await worker.waitUntilReady();
    const added = await queue.addBulk([
      { payload: 'a', opts: { attempts: 1 } },
      { payload: 'b', opts: { attempts: 1 } },
    ]);
    await waitFor(
      async () => {
        const infos = await Promise.all(added.map((a) => queue.get(a.id)));
        return infos.every((i) => i?.state === 'completed');
      },
      { what: 'both jobs to complete after the snooze' },
    );
    const ran = batches.flat().sort();
    expect(ran).toEqual([
      ['a', 1],
      ['a', 1],
      ['b', 1],
      ['b', 1],
    ]);
    const c = inspector(redis.url());
    closers.push(async () => void (await c.quit()));
    expect(await c.hget(queueKeys(name).counters, 'snoozed')).toBe('2');
  });

  it('a delay that is not ms or a duration string is a ValidationError at construction, naming what to write', () => {
    for (const bad of ['soon', -5, Number.NaN, undefined, {}, '2y'] as unknown[]) {
      const made = (): SnoozeError => new SnoozeError(bad as number);
      expect(made).toThrow(ValidationError);
      expect(made).toThrow(/SnoozeError.*(milliseconds|duration|'30s')/);
    }
    expect(() => new SnoozeError('400d')).toThrow(/at most a year/);
    const ok = new SnoozeError('1m30s');
    expect(ok.delayMs).toBe(90_000);
    expect(ok.code).toBe('DELAYQ_SNOOZE');
    expect(ok).toBeInstanceOf(Error);
  });
});
