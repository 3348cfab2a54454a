/**
 * Every view tells the same truth: the counts, `held`, `waitingChildren`, the next due time and the
 * due histogram of a queue holding default, prioritized and grouped jobs and a flow are equal in
 * queue.counts(), the Inspector, `delayq stats --json`, the CLI dashboard's JSON and its /metrics,
 * under each strategy and with partitions. Also: a held grouped job behind a running one, the CLI dashboard's /metrics for a
 * queue created after it started, and `delayq --version`.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Queue, ValidationError, Worker, type QueueOptions } from '../../src/index.js';
import { Inspector } from '../../src/inspect/inspector.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { buildOnce, ROOT, runCli, startCli } from './run-cli.js';

const redis = useRedis();
const TOKEN = 'views-token-0123456789abcdef';
const bearer = { authorization: `Bearer ${TOKEN}` };
const open: Array<{ close(): Promise<unknown> }> = [];
let client: Redis | undefined;

beforeAll(async () => {
  await buildOnce();
}, 240_000);
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
  await client?.quit();
  client = undefined;
});
vi.setConfig({ testTimeout: 90_000 });

const MINUTE = 60_000;
const json = (text: string): unknown => JSON.parse(text.trim().split('\n').at(-1)!);

/** `delayq dashboard` with a token on a free port (no --queues: it finds every queue). */
async function cliDashboard(): Promise<string> {
  const proc = startCli(['--json', 'dashboard', '--port', '0', '--token', TOKEN], { redisUrl: redis.url() });
  const line = await waitFor(
    () =>
      proc
        .stdout()
        .split('\n')
        .find((l) => l.includes('"url"')),
    {
      what: 'the dashboard to listen',
      timeoutMs: 30_000,
    },
  );
  return (JSON.parse(line) as { url: string }).url;
}

/** The samples of a /metrics text whose labels are exactly {queue="<name>"}: metric name -> value. */
async function scrape(base: string, name: string): Promise<Map<string, number>> {
  const res = await fetch(new URL('metrics', base), { headers: bearer });
  expect(res.status).toBe(200);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    const m = /^(\w+)\{queue="([^"]*)"\} (\S+)$/.exec(line);
    if (m && m[2] === name) out.set(m[1]!, Number(m[3]));
  }
  return out;
}

/** Sum consecutive groups of `size` slices: one-minute slices as five-minute ones. */
function regroup(counts: readonly number[], size: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < counts.length; i += size)
    out.push(counts.slice(i, i + size).reduce((a, b) => a + b, 0));
  return out;
}

interface Figures {
  scheduled: number;
  due: number;
  held: number;
  waitingChildren: number;
}

/**
 * Default (and unless `classes` is false, prioritized and grouped) jobs, due now and in the coming hour, each due in the middle of
 * a minute (and of a five-minute slice), so reads a few seconds apart put them in the same slices.
 * With `flow`, also a flow: parent fp, due now but waiting for its child fc (due in 17.5 min).
 */
async function seed(queue: Queue<string>, classes: boolean, flow: boolean): Promise<void> {
  await queue.add('d1', { id: 'd1' });
  await queue.add('d2', { id: 'd2' });
  await queue.add('d3', { id: 'd3', delay: 2.5 * MINUTE });
  await queue.add('d4', { id: 'd4', delay: 25.5 * MINUTE });
  if (!classes) return;
  await queue.add('p1', { id: 'p1', priority: 5 });
  await queue.add('p2', { id: 'p2', priority: 1, delay: 7.5 * MINUTE });
  await queue.add('a1', { id: 'a1', group: 'A' });
  await queue.add('a2', { id: 'a2', group: 'A' });
  await queue.add('a3', { id: 'a3', group: 'A', delay: 7.5 * MINUTE });
  await queue.add('b1', { id: 'b1', group: 'B' });
  await queue.add('b2', { id: 'b2', group: 'B', delay: 45.5 * MINUTE });
  if (!flow) return;
  await queue.addFlow({
    payload: 'fp',
    opts: { id: 'fp' },
    children: [{ payload: 'fc', opts: { id: 'fc', delay: 17.5 * MINUTE } }],
  });
}

/**
 * What seed() adds, as every view must show it (no worker: group A's one slot holds one of its
 * two due jobs), and the five-minute slices of the coming hour: d3; p2 and a3; d4; b2. The wheel
 * takes neither priorities nor groups: its queue holds the default jobs d1 to d4 only. A flow's
 * parent waits for its child: counted as waiting for children alone, never as scheduled or due
 * (though its own due time has come); its child is scheduled, in the slice of 15 to 20 minutes.
 */
function expected(
  classes: boolean,
  flow: boolean,
): {
  counts: Figures;
  slices: number[];
} {
  if (!classes)
    return {
      counts: { scheduled: 4, due: 2, held: 0, waitingChildren: 0 },
      slices: [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0],
    };
  if (!flow)
    return {
      counts: { scheduled: 11, due: 6, held: 1, waitingChildren: 0 },
      slices: [1, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0],
    };
  return {
    counts: { scheduled: 12, due: 6, held: 1, waitingChildren: 1 },
    slices: [1, 2, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0],
  };
}

const CASES: Array<[string, Pick<QueueOptions<string>, 'strategy' | 'partitions'>]> = [
  ['zpopmin', { strategy: 'zpopmin' }],
  ['range', { strategy: 'range' }],
  ['zpopmin, 3 partitions', { strategy: 'zpopmin', partitions: 3 }],
  ['wheel', { strategy: 'wheel' }],
];

describe('every view shows the same figures', () => {
  it.each(CASES)(
    'counts, held, next due and the due histogram agree across counts(), stats --json, the dashboard and /metrics (%s)',
    async (_label, options) => {
      const name = uniqueQueue('views');
      const queue = new Queue<string>(name, { connection: redis.url(), ...options });
      open.push(queue);
      // The wheel takes neither priorities nor groups.
      const classes = options.strategy !== 'wheel';
      // Flows are kept by the zset strategies on a queue of one partition.
      const flow = classes && options.partitions === undefined;
      await seed(queue, classes, flow);
      const { counts: EXPECTED, slices: FIVE_MINUTE_SLICES } = expected(classes, flow);
      const d1Due = (await queue.get('d1'))!.runAt.getTime();

      // The library: queue.counts() and the Inspector the CLI and dashboard use.
      client = inspector(redis.url());
      const view = await Inspector.open(client, name);
      open.push(view);
      const counts = await queue.counts();
      const figures = await view.figures({ bucketMs: 5 * MINUTE, buckets: 12 });

      // The CLI.
      const stats = json((await runCli(['--json', 'stats', name], { redisUrl: redis.url() })).stdout) as {
        counts: Figures;
        nextDue: number | null;
        due: { overdue: number; counts: number[]; bucketMs: number };
      };

      // The CLI's dashboard: its JSON and its /metrics (which found the queue itself).
      const base = await cliDashboard();
      const page = (await (await fetch(new URL(`api/queues/${name}`, base), { headers: bearer })).json()) as {
        counts: Figures;
        nextDue: number | null;
        due: { overdue: number; counts: number[]; bucketMs: number };
      };
      const metrics = await scrape(base, name);

      const pick = (c: Figures) => ({
        scheduled: c.scheduled,
        due: c.due,
        held: c.held,
        waitingChildren: c.waitingChildren,
      });
      expect(pick(counts)).toEqual(EXPECTED);
      expect(pick(figures)).toEqual(EXPECTED);
      expect(pick(stats.counts)).toEqual(EXPECTED);
      expect(pick(page.counts)).toEqual(EXPECTED);
      expect({
        scheduled: metrics.get('delayq_scheduled_jobs'),
        due: metrics.get('delayq_due_jobs'),
        held: metrics.get('delayq_held_jobs'),
        waitingChildren: metrics.get('delayq_waiting_children_jobs'),
      }).toEqual(EXPECTED);

      // The earliest due job is d1, the first added: every view names its due time.
      expect(figures.nextDue).toBe(d1Due);
      expect(stats.nextDue).toBe(d1Due);
      expect(page.nextDue).toBe(d1Due);
      expect(metrics.get('delayq_next_due_timestamp_seconds')).toBe(d1Due / 1000);

      // The histogram: the chart of `delayq stats` (five-minute slices) and the dashboard's
      // (one-minute slices, summed by five) hold the same jobs; the due ones are `overdue`.
      expect(figures.histogram).toMatchObject({ overdue: EXPECTED.due, counts: FIVE_MINUTE_SLICES });
      expect(stats.due).toMatchObject({ overdue: EXPECTED.due, counts: FIVE_MINUTE_SLICES });
      expect(page.due.bucketMs).toBe(MINUTE);
      expect(page.due.overdue).toBe(EXPECTED.due);
      expect(regroup(page.due.counts, 5)).toEqual(FIVE_MINUTE_SLICES);
    },
  );
});

describe('the wheel', () => {
  it('counts the jobs of a bucket that has ended as due before any worker promotes it', async () => {
    const name = uniqueQueue('wheel');
    const queue = new Queue<string>(name, { connection: redis.url(), strategy: 'wheel' });
    open.push(queue);
    await queue.add('soon', { id: 'soon', delay: 200 });
    const due = (await queue.get('soon'))!.runAt.getTime();
    expect(await queue.counts()).toMatchObject({ scheduled: 1, due: 0 });
    // No worker runs: the bucket stays in the wheel after its end, and its job is due all the same.
    await waitFor(async () => (await queue.counts()).due === 1, {
      what: 'the bucket to end',
      timeoutMs: 5_000,
    });
    client = inspector(redis.url());
    const view = await Inspector.open(client, name);
    open.push(view);
    const figures = await view.figures({ bucketMs: MINUTE, buckets: 5 });
    expect(figures).toMatchObject({ scheduled: 1, due: 1, held: 0 });
    expect(figures.histogram).toMatchObject({ overdue: 1, counts: [0, 0, 0, 0, 0] });
    // The wheel's next due time is its bucket's end: within one bucket (1 s) after the job's.
    expect(figures.nextDue! - due).toBeGreaterThanOrEqual(0);
    expect(figures.nextDue! - due).toBeLessThanOrEqual(1_000);
  });
});

describe('the due histogram’s shape', () => {
  it('is refused, naming the option, when it has no slices, too many or a slice that is not whole ms', async () => {
    const name = uniqueQueue('shape');
    const queue = new Queue<string>(name, { connection: redis.url() });
    open.push(queue);
    await queue.add('x', { delay: '1m' });
    client = inspector(redis.url());
    const view = await Inspector.open(client, name);
    open.push(view);
    await expect(view.figures({ buckets: 0 })).rejects.toThrow(ValidationError);
    await expect(view.figures({ buckets: 1441 })).rejects.toThrow(
      /buckets must be a whole number from 1 to 1440/,
    );
    await expect(view.figures({ bucketMs: 0.5 })).rejects.toThrow(/bucketMs must be a whole number of ms/);
    expect((await view.figures({ bucketMs: MINUTE, buckets: 1440 })).histogram.counts[0]).toBe(1);
  });
});

describe('held grouped jobs', () => {
  it('a due grouped job behind its group’s running job counts as due and as held until the slot frees', async () => {
    const name = uniqueQueue('held');
    const queue = new Queue<string>(name, { connection: redis.url() });
    open.push(queue);
    let release = () => {};
    const running = new Promise<void>((resolve) => (release = resolve));
    const started: string[] = [];
    const worker = new Worker<string>(
      name,
      async (job) => {
        started.push(job.id);
        if (job.id === 'first') await running;
      },
      { connection: redis.url(), concurrency: 4, groups: { concurrency: 1 } },
    );
    open.push(worker);
    await queue.add('x', { id: 'first', group: 'customer-1' });
    await waitFor(() => started.includes('first'), { what: 'the first job to start' });
    await queue.add('y', { id: 'second', group: 'customer-1' });
    // A job of another group is due too, and runs: not held.
    await queue.add('z', { id: 'other', group: 'customer-2' });
    await waitFor(() => started.includes('other'), { what: 'the other group’s job to run' });
    // Its ack may still be on the way: wait until only the first job holds a lease.
    await waitFor(async () => (await queue.counts()).active === 1, { what: 'the other job’s ack' });

    expect(await queue.counts()).toMatchObject({ scheduled: 1, due: 1, held: 1, active: 1 });
    client = inspector(redis.url());
    const view = await Inspector.open(client, name);
    open.push(view);
    expect(await view.counts()).toMatchObject({
      due: 1,
      held: 1,
      nextDue: (await queue.get('second'))!.runAt.getTime(),
    });
    expect(started).not.toContain('second');
    // `delayq stats <queue>` does not blame the workers for a wait its group causes.
    const text = (await runCli(['stats', name], { redisUrl: redis.url() })).stdout;
    expect(text).toMatch(/held\s+1 of the due jobs wait for their group/);
    expect(text).toMatch(/the oldest due job has waited \d+ ms for a worker or its group \(see held\)/);

    release();
    await waitFor(() => started.includes('second'), { what: 'the held job to start once the slot frees' });
    await waitFor(async () => (await queue.counts()).scheduled === 0, { what: 'nothing to wait' });
    expect(await queue.counts()).toMatchObject({ due: 0, held: 0 });
  });
});

describe('the CLI dashboard’s /metrics', () => {
  it('reports a queue created after it started, at the next scrape', async () => {
    const base = await cliDashboard();
    const name = uniqueQueue('later');
    // Before the queue exists: no samples of it.
    expect((await scrape(base, name)).size).toBe(0);
    const queue = new Queue<string>(name, { connection: redis.url() });
    open.push(queue);
    await queue.add('now', { id: 'n1' });
    await queue.add('later', { id: 'n2', delay: '1h', group: 'g' });
    const metrics = await scrape(base, name);
    expect(metrics.get('delayq_scheduled_jobs')).toBe(2);
    expect(metrics.get('delayq_due_jobs')).toBe(1);
    expect(metrics.get('delayq_added_total')).toBe(2);
    expect(metrics.get('delayq_run_time_seconds_count')).toBe(0);

    // A worker elsewhere runs the due job: its run time shows in this process's /metrics.
    const worker = new Worker<string>(name, async () => {}, { connection: redis.url() });
    open.push(worker);
    const after = await waitFor(
      async () => {
        const m = await scrape(base, name);
        return m.get('delayq_run_time_seconds_count') === 1 ? m : null;
      },
      { what: 'the run time to show', timeoutMs: 15_000 },
    );
    expect(after.get('delayq_completed_total')).toBe(1);
    expect(after.get('delayq_scheduled_jobs')).toBe(1);
  });
});

describe('delayq --version', () => {
  it('prints the version in package.json and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const res = await runCli([flag]);
      expect(res.code).toBe(0);
      expect(res.stdout.trim()).toBe(version);
      expect(res.stderr).toBe('');
    }
  });
});
