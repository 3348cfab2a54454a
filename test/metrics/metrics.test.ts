import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { ValidationError } from '../../src/errors.js';
import { activitySeries } from '../../src/metrics/activity.js';
import { zeroCounters, type CounterSnapshot, type CounterValues } from '../../src/operations/stats.js';
import { Counter, Registry } from 'prom-client';
import { DelayqMetrics, registerMetrics } from '../../src/metrics/metrics.js';
import { metricsFetch, metricsHandler } from '../../src/metrics/serve.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { useWorkerProcesses } from '../support/processes.js';

const redis = useRedis();
const workers = useWorkerProcesses();
const open: Array<{ close(): Promise<void> | void }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/** Parse Prometheus text exposition into "name{labels}" -> value. */
function parseExposition(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    out.set(m[1]!, Number(m[2]));
  }
  return out;
}

async function serve(metrics: DelayqMetrics): Promise<string> {
  const server: Server = createServer(metricsHandler(metrics));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
}

async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

describe('metrics', () => {
  it('delayq_queue_paused is 1 while the queue is paused and 0 after the resume', async () => {
    const name = uniqueQueue('m');
    const metrics = new DelayqMetrics();
    const queue = new Queue(name, { connection: redis.url() });
    open.push(queue);
    metrics.observeQueue(queue);
    const url = await serve(metrics);
    const label = `{queue="${name}"}`;
    expect((await scrape(url)).get(`delayq_queue_paused${label}`)).toBe(0);
    await queue.pause();
    expect((await scrape(url)).get(`delayq_queue_paused${label}`)).toBe(1);
    await queue.resume();
    expect((await scrape(url)).get(`delayq_queue_paused${label}`)).toBe(0);
  });

  it('delayq_waiting_children_jobs counts the flow parents waiting for their children, apart from scheduled_jobs', async () => {
    const name = uniqueQueue('m');
    const metrics = new DelayqMetrics();
    const queue = new Queue<string>(name, { connection: redis.url() });
    open.push(queue);
    metrics.observeQueue(queue);
    const url = await serve(metrics);
    const label = `{queue="${name}"}`;
    expect((await scrape(url)).get(`delayq_waiting_children_jobs${label}`)).toBe(0);
    await queue.addFlow({
      payload: 'p',
      opts: { id: 'p' },
      children: [
        { payload: 'a', opts: { id: 'a', delay: '1h' } },
        { payload: 'b', opts: { id: 'b', delay: '1h' } },
      ],
    });
    const waiting = await scrape(url);
    expect(waiting.get(`delayq_waiting_children_jobs${label}`)).toBe(1);
    // The parent is due already, but waits for its children: neither scheduled nor due.
    expect(waiting.get(`delayq_scheduled_jobs${label}`)).toBe(2);
    expect(waiting.get(`delayq_due_jobs${label}`)).toBe(0);
    expect(await queue.cancel('p')).toBe(true);
    const after = await scrape(url);
    expect(after.get(`delayq_waiting_children_jobs${label}`)).toBe(0);
    expect(after.get(`delayq_scheduled_jobs${label}`)).toBe(0);
  });

  it('leaves delayq_waiting_children_jobs out for a stand-in queue whose counts() has no such figure', async () => {
    const metrics = new DelayqMetrics();
    metrics.observeQueue({
      name: 'stand-in',
      counts: () =>
        Promise.resolve({ scheduled: 3, due: 1, held: 0, active: 0, dead: 0, completed: 0, cancelled: 0 }),
    } as unknown as Parameters<DelayqMetrics['observeQueue']>[0]);
    const m = parseExposition(await metrics.metrics());
    expect(m.get('delayq_scheduled_jobs{queue="stand-in"}')).toBe(3);
    expect(m.has('delayq_waiting_children_jobs{queue="stand-in"}')).toBe(false);
  });

  it('counts adds, completions, retries and deaths from the queue’s counters, with gauges and the lateness histogram', async () => {
    const name = uniqueQueue('m');
    const metrics = new DelayqMetrics();
    const queue = new Queue<{ fate: string }>(name, { connection: redis.url() });
    open.push(queue);
    metrics.observeQueue(queue);
    const url = await serve(metrics);
    const label = `{queue="${name}"}`;

    const before = await scrape(url);
    expect(before.get(`delayq_scheduled_jobs${label}`)).toBe(0);
    expect(before.get(`delayq_added_total${label}`)).toBe(0);

    await queue.add({ fate: 'ok' }, { id: 'ok' });
    await queue.add({ fate: 'flaky' }, { id: 'flaky', attempts: 2, backoff: { type: 'fixed', delay: 10 } });
    await queue.add({ fate: 'doomed' }, { id: 'doomed', attempts: 1 });
    await queue.add({ fate: 'later' }, { id: 'later', delay: '1h' });
    await queue.add({ fate: 'ok' }, { id: 'ok' }); // an existing id: not counted
    const added = await scrape(url);
    expect(added.get(`delayq_added_total${label}`)).toBe(4);
    expect(added.get(`delayq_scheduled_jobs${label}`)).toBe(4);

    const worker = new Worker<{ fate: string }>(
      name,
      async (job) => {
        if (job.payload.fate === 'doomed' || (job.payload.fate === 'flaky' && job.attempt === 1))
          throw new Error('no');
      },
      { connection: redis.url(), concurrency: 4 },
    );
    open.push(worker);
    worker.on('error', () => {});

    // claimed, completed and run times arrive with the worker's once-a-second flush.
    const after = await waitFor(
      async () => {
        const m = await scrape(url);
        return m.get(`delayq_completed_total${label}`) === 2 &&
          m.get(`delayq_dead_total${label}`) === 1 &&
          m.get(`delayq_claimed_total${label}`) === 4 &&
          m.get(`delayq_run_time_seconds_count${label}`) === 4
          ? m
          : null;
      },
      { what: 'counters to move' },
    );
    expect(after.get(`delayq_failed_total${label}`)).toBe(1);
    expect(after.get(`delayq_scheduled_jobs${label}`)).toBe(1);
    expect(after.get(`delayq_active_jobs${label}`)).toBe(0);
    expect(after.get(`delayq_dead_jobs${label}`)).toBe(1);
    // Four claimed attempts: ok, flaky (twice), doomed.
    expect(after.get(`delayq_lateness_seconds_count${label}`)).toBe(4);
    expect(after.get(`delayq_lateness_seconds_bucket{le="+Inf",queue="${name}"}`)).toBe(4);
    expect(after.get(`delayq_lateness_seconds_bucket{le="5",queue="${name}"}`)).toBeLessThanOrEqual(4);
    expect(after.get(`delayq_lateness_seconds_sum${label}`)).toBeGreaterThanOrEqual(0);
    // Four finished attempts (ok, flaky twice, doomed), from the counters in Redis.
    expect(after.get(`delayq_run_time_seconds_bucket{le="+Inf",queue="${name}"}`)).toBe(4);
    expect(after.get(`delayq_run_time_seconds_bucket{le="300",queue="${name}"}`)).toBe(4);
    expect(after.get(`delayq_run_time_seconds_sum${label}`)).toBeGreaterThanOrEqual(0);
  });

  it('counts the work of a worker in another process (the totals are read from Redis)', async () => {
    const name = uniqueQueue('m');
    const metrics = new DelayqMetrics();
    const queue = new Queue<number>(name, { connection: redis.url() });
    open.push(queue);
    metrics.observeQueue(queue);
    const url = await serve(metrics);
    const label = `{queue="${name}"}`;
    await queue.addBulk([1, 2, 3].map((n) => ({ payload: n })));

    const child = await workers.spawn({ url: redis.url(), queue: name, concurrency: 2 });
    const after = await waitFor(
      async () => {
        const m = await scrape(url);
        return m.get(`delayq_completed_total${label}`) === 3 &&
          m.get(`delayq_run_time_seconds_count${label}`) === 3
          ? m
          : null;
      },
      { what: 'the other process’s completions and run times to show', timeoutMs: 20_000 },
    );
    // The run times of a worker in another process: every bucket is cumulative, up to +Inf.
    expect(after.get(`delayq_run_time_seconds_bucket{le="+Inf",queue="${name}"}`)).toBe(3);
    expect(after.get(`delayq_run_time_seconds_bucket{le="300",queue="${name}"}`)).toBe(3);
    expect(after.get(`delayq_added_total${label}`)).toBe(3);
    expect(after.get(`delayq_claimed_total${label}`)).toBe(3);
    expect(after.get(`delayq_lateness_seconds_count${label}`)).toBe(3);
    expect(after.get(`delayq_scheduled_jobs${label}`)).toBe(0);
    expect(child.ledger().filter((e) => e.phase === 'completed')).toHaveLength(3);
  });

  it('shows the run-time buckets chosen among the recorded bounds, and refuses any other, naming them', async () => {
    const name = uniqueQueue('m');
    const metrics = new DelayqMetrics({ runTimeBuckets: [0.1, 1] });
    const queue = new Queue(name, { connection: redis.url() });
    open.push(queue);
    metrics.observeQueue(queue);
    const text = await metrics.metrics();
    const buckets = text.split('\n').filter((l) => l.startsWith(`delayq_run_time_seconds_bucket`));
    expect(buckets).toEqual([
      `delayq_run_time_seconds_bucket{le="0.1",queue="${name}"} 0`,
      `delayq_run_time_seconds_bucket{le="1",queue="${name}"} 0`,
      `delayq_run_time_seconds_bucket{le="+Inf",queue="${name}"} 0`,
    ]);
    expect(() => new DelayqMetrics({ runTimeBuckets: [0.2] })).toThrow(ValidationError);
    expect(() => new DelayqMetrics({ runTimeBuckets: [0.2] })).toThrow(
      /runTimeBuckets \[0\.2\].*0\.001, 0\.005/,
    );
  });

  it('refuses the removed latenessBuckets option, naming it', () => {
    expect(() => new DelayqMetrics({ latenessBuckets: [1] } as never)).toThrow(ValidationError);
    expect(() => new DelayqMetrics({ latenessBuckets: [1] } as never)).toThrow(/latenessBuckets/);
  });

  it('answers only GET and HEAD', async () => {
    const url = await serve(new DelayqMetrics());
    const res = await fetch(url, { method: 'POST' });
    expect(res.status).toBe(405);
  });
});

describe('activitySeries', () => {
  const snapshot = (second: number, values: Partial<CounterValues>): CounterSnapshot => ({
    second,
    values: { ...zeroCounters(), ...values },
  });

  it('turns consecutive snapshots into per-second differences, summed over partitions', () => {
    const p0 = [
      snapshot(100, { completed: 5, 'lat:+Inf': 5, 'lat:sum': 10, 'lat:5': 5 }),
      snapshot(101, { completed: 7, 'lat:+Inf': 7, 'lat:sum': 14, 'lat:5': 7 }),
      // Nothing flushed at 102: what happened then shows at 103.
      snapshot(103, { completed: 10, dead: 1, 'lat:+Inf': 10, 'lat:sum': 1014, 'lat:5': 9 }),
    ];
    const p1 = [snapshot(101, { completed: 1 }), snapshot(102, { completed: 4, failed: 2 })];
    const series = activitySeries([p0, p1], 103, 4);
    expect(series.map((s) => s.t)).toEqual([100_000, 101_000, 102_000, 103_000]);
    expect(series.map((s) => [s.completed, s.failed, s.dead])).toEqual([
      [0, 0, 0], // the first snapshot has none before it
      [2, 0, 0],
      [3, 2, 0],
      [3, 0, 1],
    ]);
    expect(series.map((s) => [s.latenessCount, s.latenessSumMs, s.latenessP99Ms])).toEqual([
      [0, 0, null],
      [2, 4, 5],
      [0, 0, null],
      // Of 3 claims, 2 were within 5 ms and one beyond 5 s: the p99 lies past the last bound.
      [3, 1000, 5000],
    ]);
  });

  it('takes differences across the 2^32 wrap of a snapshot field', () => {
    const series = activitySeries(
      [[snapshot(10, { claimed: 2 ** 32 - 2 }), snapshot(11, { claimed: 3 })]],
      11,
      1,
    );
    expect(series.map((s) => s.claimed)).toEqual([5]);
  });
});

describe('metrics in the user’s own registry', () => {
  it('registerMetrics() puts delayq’s metrics beside the app’s, served by metricsFetch() too', async () => {
    const name = uniqueQueue('m');
    const registry = new Registry();
    const appRequests = new Counter({ name: 'app_requests_total', help: 'app', registers: [registry] });
    appRequests.inc(3);
    const metrics = registerMetrics(registry);
    expect(metrics.registry).toBe(registry);
    const queue = new Queue<number>(name, { connection: redis.url() });
    open.push(queue);
    metrics.observeQueue(queue);
    await queue.add(1, { delay: '1h' });

    const res = await metricsFetch(registry)(new Request('http://127.0.0.1/metrics'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(registry.contentType);
    const scraped = parseExposition(await res.text());
    expect(scraped.get('app_requests_total')).toBe(3);
    expect(scraped.get(`delayq_added_total{queue="${name}"}`)).toBe(1);
    expect(scraped.get(`delayq_scheduled_jobs{queue="${name}"}`)).toBe(1);

    // prom-client refuses a second set of the same names; another prefix is another set.
    expect(() => registerMetrics(registry)).toThrow(/already been registered/);
    const other = registerMetrics(registry, { prefix: 'jobs_' });
    other.observeQueue(queue);
    expect(parseExposition(await registry.metrics()).get(`jobs_added_total{queue="${name}"}`)).toBe(1);

    const post = await metricsFetch(metrics)(new Request('http://127.0.0.1/metrics', { method: 'POST' }));
    expect(post.status).toBe(405);
  });
});
