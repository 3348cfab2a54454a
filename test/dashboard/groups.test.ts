/**
 * The dashboard's groups panel API and the per-group metrics (issue 29) against a real
 * redis-server: the top groups by backlog with running / limit; pause and resume behind the
 * token and the CSRF check like every action; a job's group in the job tables; per-group gauges
 * for the top N groups by backlog, the rest summed as group="(other)".
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, ValidationError, Worker } from '../../src/index.js';
import { startDashboard, type DashboardServer } from '../../src/dashboard/server.js';
import { DelayqMetrics } from '../../src/metrics/metrics.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const TOKEN = 'test-token-0123456789abcdef';
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function dashboard(options: Parameters<typeof startDashboard>[0] = {}): Promise<DashboardServer> {
  const server = await startDashboard({ connection: redis.url(), port: 0, ...options });
  open.push(server);
  return server;
}

/** A queue with groups a (6 waiting), b (4), c (2), d (1) and one job of b running. */
async function seed(name: string): Promise<{ queue: Queue<number>; release: () => void }> {
  const queue = new Queue<number>(name, { connection: redis.url() });
  open.push(queue);
  let release = (): void => {};
  const held = new Promise<void>((r) => (release = r));
  const worker = new Worker<number>(name, async () => held, {
    connection: redis.url(),
    groups: { concurrency: 2 },
  });
  open.push({ close: async () => (release(), await worker.close()) });
  await queue.add(0, { group: 'b', id: 'b-running' });
  await waitFor(async () => (await queue.counts()).active === 1, { what: 'b-running started' });
  await queue.addBulk([
    ...Array.from({ length: 6 }, (_, i) => ({ payload: i, opts: { group: 'a', delay: '1h' } })),
    ...Array.from({ length: 4 }, (_, i) => ({ payload: i, opts: { group: 'b', delay: '1h' } })),
    ...Array.from({ length: 2 }, (_, i) => ({ payload: i, opts: { group: 'c', delay: '1h' } })),
    { payload: 1, opts: { group: 'd', delay: '1h', id: 'd-1' } },
  ]);
  return { queue, release };
}

describe('dashboard groups panel', () => {
  it('lists the top groups by backlog with running / limit, and shows a job’s group in the tables', async () => {
    const name = uniqueQueue('dgrp');
    await seed(name);
    const d = await dashboard();
    const page = (await (await fetch(`${d.url}api/queues/${name}/groups?limit=3`)).json()) as {
      groups: unknown[];
      bounds: unknown;
    };
    expect(page.bounds).toEqual({ concurrency: 2, limit: null });
    expect(page.groups).toEqual([
      { group: 'a', waiting: 6, due: 0, running: 0, paused: false },
      { group: 'b', waiting: 4, due: 0, running: 1, paused: false },
      { group: 'c', waiting: 2, due: 0, running: 0, paused: false },
    ]);
    expect((await fetch(`${d.url}api/queues/${name}/groups?limit=1000`)).status).toBe(400);
    const scheduled = (await (
      await fetch(`${d.url}api/queues/${name}/jobs?state=scheduled&limit=100`)
    ).json()) as {
      items: Array<{ id: string; group: string | null }>;
    };
    expect(scheduled.items.find((j) => j.id === 'd-1')?.group).toBe('d');
    const active = (await (await fetch(`${d.url}api/queues/${name}/jobs?state=active`)).json()) as {
      items: Array<{ id: string; group: string | null }>;
    };
    expect(active.items).toEqual([expect.objectContaining({ id: 'b-running', group: 'b' })]);
    // The page has the panel and the group columns.
    const html = await (await fetch(`${d.url}queues/${name}`)).text();
    expect(html).toContain('id="groups-panel"');
    expect(html).toContain('<th>group / priority</th>');
  });

  it('pauses and resumes a group only with the token and the CSRF check; a bad name is a 400', async () => {
    const name = uniqueQueue('dgrp');
    const { queue } = await seed(name);
    const d = await dashboard({ token: TOKEN });
    const pause = `${d.url}api/queues/${name}/groups/a/pause`;
    // No session: refused. Without a token at all the dashboard has no actions (tested elsewhere).
    expect((await fetch(pause, { method: 'POST', body: '{}' })).status).toBe(401);
    const login = await fetch(`${d.url}session`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: TOKEN, next: `/queues/${name}` }).toString(),
      redirect: 'manual',
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const html = await (await fetch(`${d.url}queues/${name}`, { headers: { cookie } })).text();
    const csrf = /"csrf":"([^"]+)"/.exec(html)![1]!;
    const base = { cookie, 'content-type': 'application/json' };
    const noCsrf = await fetch(pause, { method: 'POST', headers: base, body: '{}' });
    expect(noCsrf.status).toBe(403);
    expect((await queue.groups.list({ limit: 1 }))[0]?.paused).toBe(false);

    const host = new URL(d.url).host;
    const good = { ...base, 'x-csrf-token': csrf, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' };
    const ok = await fetch(pause, { method: 'POST', headers: good, body: '{}' });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ ok: true, group: 'a', paused: true, changed: true });
    expect((await queue.groups.list({ limit: 1 }))[0]).toMatchObject({ group: 'a', paused: true });
    const resumed = await fetch(`${d.url}api/queues/${name}/groups/a/resume`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(resumed.status).toBe(200);
    expect((await queue.groups.list({ limit: 1 }))[0]).toMatchObject({ group: 'a', paused: false });
    const bad = await fetch(`${d.url}api/queues/${name}/groups/${encodeURIComponent('a\tb')}/pause`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/group/);
  });
});

describe('per-group metrics', () => {
  it('reports the top N groups by backlog and sums the rest under group="(other)"', async () => {
    const name = uniqueQueue('mgrp');
    const { queue } = await seed(name);
    await queue.groups.pause('c');
    const metrics = new DelayqMetrics({ groupsTopN: 2 });
    metrics.observeQueue(queue);
    const text = await metrics.metrics();
    const samples = (metric: string): Record<string, number> =>
      Object.fromEntries(
        [
          ...text.matchAll(
            new RegExp(`^delayq_${metric}\\{queue="${name}",group="([^"]+)"\\} (\\S+)$`, 'gm'),
          ),
        ].map((m) => [m[1]!, Number(m[2])]),
      );
    expect(samples('group_waiting_jobs')).toEqual({ a: 6, b: 4, '(other)': 3 });
    expect(samples('group_running_jobs')).toEqual({ a: 0, b: 1, '(other)': 0 });
    expect(samples('group_due_jobs')).toEqual({ a: 0, b: 0 });
    expect(samples('group_paused')).toEqual({ a: 0, b: 0 });
    // Bounded: N + 1 series per gauge however many groups there are.
    await queue.addBulk(
      Array.from({ length: 50 }, (_, i) => ({ payload: i, opts: { group: `g${i}`, delay: '1h' } })),
    );
    const more = await metrics.metrics();
    expect([...more.matchAll(/^delayq_group_waiting_jobs\{/gm)]).toHaveLength(3);
    expect(() => new DelayqMetrics({ groupsTopN: -1 })).toThrow(ValidationError);
    expect(() => new DelayqMetrics({ groupsTopN: 1.5 })).toThrow(/groupsTopN must be a whole number/);
  });
});
