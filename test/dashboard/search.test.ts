/**
 * The dashboard's search and logs over HTTP (issue 33): GET /api/queues/<q>/search answers
 * queue.search's page as table rows and its cursor, for an id prefix, a state, a group and a time
 * range; a bad filter is a 400 naming it; the job API carries a job's log lines; the queue page
 * holds the search box; with a token, the search needs it like every read.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { startDashboard, type DashboardServer } from '../../src/dashboard/server.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function dashboard(options: Parameters<typeof startDashboard>[0] = {}): Promise<DashboardServer> {
  const server = await startDashboard({ connection: redis.url(), port: 0, ...options });
  open.push(server);
  return server;
}

function queueOf(name: string): Queue<{ i: number }> {
  const queue = new Queue<{ i: number }>(name, { connection: redis.url() });
  open.push(queue);
  return queue;
}

interface Page {
  jobs: Array<{ id: string; state: string; runAt: number; group: string | null; preview: string }>;
  cursor: string | null;
}

async function search(base: string, name: string, query: Record<string, string>): Promise<Page> {
  const res = await fetch(`${base}api/queues/${name}/search?${new URLSearchParams(query).toString()}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Page;
}

describe('dashboard search', () => {
  it('finds jobs by id prefix, state, group and time, a page at a time', async () => {
    const name = uniqueQueue('dsearch');
    const queue = queueOf(name);
    await queue.addBulk(
      Array.from({ length: 12 }, (_, i) => ({
        payload: { i },
        opts: { id: `order:${String(i).padStart(2, '0')}`, delay: `${i + 1}m` },
      })),
    );
    await queue.add({ i: 99 }, { id: 'tenant-job', group: 'acme', delay: '30m' });
    await queue.add({ i: 98 }, { id: 'gone', delay: '1h' });
    await queue.cancel('gone');
    const d = await dashboard();

    const first = await search(d.url, name, { id: 'order:', limit: '5' });
    expect(first.jobs.map((j) => j.id)).toEqual(['order:00', 'order:01', 'order:02', 'order:03', 'order:04']);
    expect(first.jobs[0]).toMatchObject({ state: 'scheduled', group: null, preview: '{"i":0}' });
    const second = await search(d.url, name, { id: 'order:', limit: '5', cursor: first.cursor! });
    expect(second.jobs.map((j) => j.id)).toEqual([
      'order:05',
      'order:06',
      'order:07',
      'order:08',
      'order:09',
    ]);
    const last = await search(d.url, name, { id: 'order:', limit: '5', cursor: second.cursor! });
    expect(last.jobs.map((j) => j.id)).toEqual(['order:10', 'order:11']);
    expect(last.cursor).toBeNull();

    expect((await search(d.url, name, { state: 'cancelled' })).jobs.map((j) => j.id)).toEqual(['gone']);
    expect((await search(d.url, name, { group: 'acme' })).jobs.map((j) => j.id)).toEqual(['tenant-job']);
    // A time range as epoch ms and as an ISO date; empty fields are no filter.
    const due = (await queue.get('order:03'))!.runAt;
    expect(
      (
        await search(d.url, name, { from: String(due.getTime()), to: due.toISOString(), id: '', state: '' })
      ).jobs.map((j) => j.id),
    ).toEqual(['order:03']);
  });

  it('finds the flow parents waiting for their children by state, and with every state', async () => {
    const name = uniqueQueue('dsearch');
    const queue = queueOf(name);
    await queue.addFlow({
      payload: { i: 0 },
      opts: { id: 'parent', delay: '5m' },
      children: [{ payload: { i: 1 }, opts: { id: 'child', delay: '1h' } }],
    });
    const d = await dashboard();
    const held = await search(d.url, name, { state: 'waiting-children' });
    expect(held.jobs).toEqual([
      expect.objectContaining({ id: 'parent', state: 'waiting-children', preview: '{"i":0}' }),
    ]);
    expect(held.jobs[0]!.runAt).toBe((await queue.get('parent'))!.runAt.getTime());
    expect((await search(d.url, name, { state: 'scheduled' })).jobs.map((j) => j.id)).toEqual(['child']);
    // Every state: the parent first (a job waits for its children before it waits to be due).
    expect((await search(d.url, name, {})).jobs.map((j) => [j.id, j.state])).toEqual([
      ['parent', 'waiting-children'],
      ['child', 'scheduled'],
    ]);
    const html = await (await fetch(`${d.url}queues/${name}`)).text();
    expect(html).toContain('<option value="waiting-children">waiting-children</option>');
  });

  it('answers a bad filter with a 400 naming it', async () => {
    const name = uniqueQueue('dsearch');
    await queueOf(name).add({ i: 1 }, { delay: '1h' });
    const d = await dashboard();
    for (const [query, message] of [
      [
        { state: 'waiting' },
        /search state must be one of waiting-children, scheduled, active, dead, completed, cancelled/,
      ],
      [{ from: '2000', to: '1000' }, /from .* is after to/],
      [{ from: 'yesterday' }, /from must be epoch ms or an ISO date/],
      [{ limit: '500' }, /limit must be 1..100/],
      [{ cursor: 'forged' }, /cursor is not one delayq gave/],
      [{ group: 'g', state: 'dead' }, /finished jobs are not kept by group/],
      [
        { group: 'g', state: 'waiting-children' },
        /flow parents waiting for their children are not kept by group/,
      ],
    ] as const) {
      const res = await fetch(`${d.url}api/queues/${name}/search?${new URLSearchParams(query).toString()}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(message);
    }
  });

  it('shows a job’s log lines in the job API, and the search box on the queue page', async () => {
    const name = uniqueQueue('dsearch');
    const queue = queueOf(name);
    const worker = new Worker<{ i: number }>(
      name,
      async (job) => {
        await job.log('picked 3 items');
        await job.log('label printed');
      },
      { connection: redis.url(), keepCompleted: { count: 10, age: '1h' } },
    );
    open.push({ close: () => worker.close({ timeoutMs: 2_000 }) });
    await queue.add({ i: 1 }, { id: 'pick-1' });
    await waitFor(async () => (await queue.get('pick-1'))?.state === 'completed');
    const d = await dashboard();
    const job = (await (await fetch(`${d.url}api/queues/${name}/jobs/pick-1`)).json()) as {
      logs: Array<{ attempt: number; at: string; line: string }>;
    };
    expect(job.logs.map((l) => [l.attempt, l.line])).toEqual([
      [1, 'picked 3 items'],
      [1, 'label printed'],
    ]);
    expect(Number.isNaN(Date.parse(job.logs[0]!.at))).toBe(false);
    const html = await (await fetch(`${d.url}queues/${name}`)).text();
    expect(html).toContain('<form id="search-form"');
    expect(html).toContain('name="from" type="datetime-local"');
    const script = await fetch(`${d.url}assets/search.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
  });

  it('needs the token for a search when one is set', async () => {
    const name = uniqueQueue('dsearch');
    await queueOf(name).add({ i: 1 }, { delay: '1h' });
    const token = 'search-token-0123456789abcdef';
    const d = await dashboard({ token });
    expect((await fetch(`${d.url}api/queues/${name}/search`)).status).toBe(401);
    const res = await fetch(`${d.url}api/queues/${name}/search`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Page).jobs).toHaveLength(1);
  });
});
