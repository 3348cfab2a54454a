import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, Worker, type Codec } from '../../src/index.js';
import { createDashboard } from '../../src/dashboard/handler.js';
import { startDashboard, type DashboardServer } from '../../src/dashboard/server.js';
import { DashboardConfigError } from '../../src/dashboard/security.js';
import { jsonCodec } from '../../src/codec/json.js';
import { COMPLETED_RECORD, completedRecordWithResult } from '../../src/record/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { freePort } from '../support/redis-server.js';

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

async function seed(name: string, scheduled: number, dead: string[]): Promise<Queue> {
  const queue = new Queue(name, { connection: redis.url() });
  open.push(queue);
  if (dead.length > 0) {
    await queue.addBulk(dead.map((id) => ({ payload: { id }, opts: { id, attempts: 1 } })));
    const worker = new Worker(
      name,
      async () => {
        throw new Error('smtp 550');
      },
      { connection: redis.url(), concurrency: 10 },
    );
    worker.on('error', () => {});
    await waitFor(async () => (await queue.counts()).dead === dead.length, { what: 'dead jobs' });
    await worker.close();
  }
  await queue.addBulk(
    Array.from({ length: scheduled }, (_, i) => ({
      payload: { i },
      opts: { id: `s${String(i).padStart(3, '0')}`, delay: 60_000 + i * 1_000 },
    })),
  );
  return queue;
}

describe('dashboard over HTTP', () => {
  it("shows a flow: a parent's children and their states, a child's parent", async () => {
    const name = uniqueQueue('dflow');
    const queue = new Queue<string>(name, { connection: redis.url() });
    open.push(queue);
    await queue.addFlow({
      payload: 'report',
      opts: { id: 'fp' },
      children: [
        { payload: 'a', opts: { id: 'fa', delay: '1h' } },
        { payload: 'b', opts: { id: 'fb', delay: '1h' } },
      ],
    });
    const d = await dashboard();
    const parent = (await (await fetch(`${d.url}api/queues/${name}/jobs/fp`)).json()) as Record<
      string,
      unknown
    >;
    expect(parent).toMatchObject({
      id: 'fp',
      state: 'waiting-children',
      children: [
        { id: 'fa', state: 'scheduled' },
        { id: 'fb', state: 'scheduled' },
      ],
    });
    const child = (await (await fetch(`${d.url}api/queues/${name}/jobs/fb`)).json()) as Record<
      string,
      unknown
    >;
    expect(child).toMatchObject({ id: 'fb', state: 'scheduled', parent: 'fp' });
  });

  it('counts and lists the parents waiting for their children, and cancels one with its waiting children', async () => {
    const name = uniqueQueue('dflow');
    const queue = new Queue<string>(name, { connection: redis.url() });
    open.push(queue);
    await queue.addFlow({
      payload: 'report',
      opts: { id: 'fp', delay: '5m' },
      children: [
        { payload: 'a', opts: { id: 'fa', delay: '1h' } },
        { payload: 'b', opts: { id: 'fb', delay: '1h' } },
      ],
    });
    const d = await dashboard({ token: TOKEN });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const get = async <T>(path: string): Promise<T> =>
      (await (await fetch(`${d.url}api/${path}`, { headers: auth })).json()) as T;
    const overview = await get<{ counts: Record<string, number> }>(`queues/${name}`);
    expect(overview.counts).toMatchObject({ scheduled: 2, due: 0, waitingChildren: 1 });
    // The start page's row of the queue counts the parent too.
    const { queues } = await get<{ queues: Array<{ name: string; counts: Record<string, number> }> }>(
      'queues',
    );
    expect(queues.find((q) => q.name === name)?.counts).toMatchObject({ scheduled: 2, waitingChildren: 1 });
    const page = await get<{ state: string; total: number; items: Array<Record<string, unknown>> }>(
      `queues/${name}/jobs?state=waiting-children`,
    );
    expect(page).toMatchObject({ state: 'waiting-children', total: 1 });
    expect(page.items).toEqual([
      expect.objectContaining({
        id: 'fp',
        state: 'waiting-children',
        runAt: (await queue.get('fp'))!.runAt.getTime(),
        preview: '"report"',
      }),
    ]);
    const html = await (await fetch(`${d.url}queues/${name}`, { headers: auth })).text();
    expect(html).toContain('id="c-waiting-children"');
    expect(html).toContain('id="table-waiting-children"');
    const cancelled = await fetch(`${d.url}api/queues/${name}/jobs/fp/cancel`, {
      method: 'POST',
      headers: auth,
    });
    expect(cancelled.status).toBe(200);
    for (const id of ['fp', 'fa', 'fb']) expect((await queue.get(id))?.state).toBe('cancelled');
    const after = await get<{ counts: Record<string, number> }>(`queues/${name}`);
    expect(after.counts).toMatchObject({ scheduled: 0, waitingChildren: 0, cancelled: 3 });
    expect((await get<{ total: number }>(`queues/${name}/jobs?state=waiting-children`)).total).toBe(0);
  });

  it("shows a running job's progress in its record and in the active list", async () => {
    const name = uniqueQueue('dprog');
    const queue = new Queue(name, { connection: redis.url() });
    open.push(queue);
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let reported = false;
    const worker = new Worker(
      name,
      async (job) => {
        await job.progress({ pct: 40, stage: 'upload' });
        reported = true;
        await held;
      },
      { connection: redis.url() },
    );
    open.push({ close: async () => (release(), await worker.close()) });
    await queue.add({ file: 'a.png' }, { id: 'p1' });
    await waitFor(() => reported, { what: 'the progress report' });
    const d = await dashboard();
    const job = (await (await fetch(`${d.url}api/queues/${name}/jobs/p1`)).json()) as Record<string, unknown>;
    expect(job).toMatchObject({ id: 'p1', state: 'active', progress: { pct: 40, stage: 'upload' } });
    const active = (await (await fetch(`${d.url}api/queues/${name}/jobs?state=active`)).json()) as {
      items: Array<{ id: string; progress: unknown }>;
    };
    expect(active.items).toEqual([
      expect.objectContaining({ id: 'p1', progress: { pct: 40, stage: 'upload' } }),
    ]);
  });

  it('serves pages and data with security headers, and keeps actions off without a token', async () => {
    const name = uniqueQueue('d');
    await seed(name, 25, ['x1']);
    const d = await dashboard();
    const page = await fetch(`${d.url}queues/${name}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await page.text();
    expect(html).toContain('"canAct":false');
    expect(html).not.toContain('id="retry-all"');

    const overview = (await (await fetch(`${d.url}api/queues/${name}`)).json()) as {
      counts: Record<string, number>;
      due: { counts: number[]; bucketMs: number };
    };
    expect(overview.counts).toEqual({
      scheduled: 25,
      due: 0,
      held: 0,
      active: 0,
      dead: 1,
      completed: 0,
      cancelled: 0,
      waitingChildren: 0,
    });
    // Due 60..84 s from now: the second and (for the last ones) the first minute slices of the hour.
    expect(overview.due.counts).toHaveLength(60);
    expect(overview.due.counts.reduce((a, b) => a + b, 0)).toBe(25);
    expect(overview.due.counts[0]! + overview.due.counts[1]!).toBe(25);

    const page3 = (await (
      await fetch(`${d.url}api/queues/${name}/jobs?state=scheduled&offset=20&limit=10`)
    ).json()) as {
      total: number;
      items: Array<{ id: string }>;
    };
    expect(page3.total).toBe(25);
    expect(page3.items.map((j) => j.id)).toEqual(['s020', 's021', 's022', 's023', 's024']);
    const dead = (await (await fetch(`${d.url}api/queues/${name}/jobs?state=dead`)).json()) as {
      items: Array<{ id: string; lastError: { message: string } }>;
    };
    expect(dead.items).toEqual([
      expect.objectContaining({ id: 'x1', lastError: { name: 'Error', message: 'smtp 550' } }),
    ]);
    const job = (await (await fetch(`${d.url}api/queues/${name}/jobs/s003`)).json()) as Record<
      string,
      unknown
    >;
    expect(job).toMatchObject({ id: 's003', state: 'scheduled', payload: { i: 3 } });

    const list = (await (await fetch(`${d.url}api/queues`)).json()) as { queues: Array<{ name: string }> };
    expect(list.queues.map((q) => q.name)).toContain(name);

    const post = await fetch(`${d.url}api/queues/${name}/jobs/x1/retry`, { method: 'POST' });
    expect(post.status).toBe(403);
    expect(((await post.json()) as { error: string }).error).toMatch(/actions are off/);
    expect((await fetch(`${d.url}api/queues/${name}/jobs?state=bogus`)).status).toBe(400);
    expect((await fetch(`${d.url}api/queues/bad%7Bname`)).status).toBe(400);
    // DNS rebinding: another name for this server is refused without a token.
    const rebound = await new Promise<number>((resolve, reject) => {
      request(`${d.url}api/queues`, { headers: { host: 'evil.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    expect(rebound).toBe(403);
  });

  it('refuses to listen beyond loopback without a token', async () => {
    await expect(startDashboard({ connection: redis.url(), host: '0.0.0.0', port: 0 })).rejects.toThrow(
      DashboardConfigError,
    );
    await expect(startDashboard({ connection: redis.url(), host: '0.0.0.0', port: 0 })).rejects.toThrow(
      /without a token/,
    );
  });

  it('refuses a token shorter than 16 characters, saying how long it was and how to make one', async () => {
    const short = startDashboard({ connection: redis.url(), port: 0, token: 'T0ken-abc' });
    await expect(short).rejects.toThrow(DashboardConfigError);
    await expect(short).rejects.toThrow(
      /at least 16 characters, got 9: make one with `openssl rand -hex 16`/,
    );
  });

  it('createDashboard (mounted in an app) refuses a short or empty token the same way: an empty one would turn sign-in off', () => {
    expect(() => createDashboard({ connection: redis.url(), token: 'T0ken-abc' })).toThrow(
      /at least 16 characters, got 9/,
    );
    expect(() => createDashboard({ connection: redis.url(), token: '' })).toThrow(DashboardConfigError);
  });

  it('with a token: logs in by link, and takes actions only from same-origin requests with the CSRF token', async () => {
    const name = uniqueQueue('d');
    await seed(name, 1, ['y1', 'y2']);
    const d = await dashboard({ token: TOKEN });
    expect((await fetch(`${d.url}api/queues/${name}`)).status).toBe(401);
    expect((await fetch(`${d.url}queues/${name}`)).status).toBe(401);
    expect(
      (await fetch(`${d.url}api/queues/${name}`, { headers: { authorization: `Bearer ${TOKEN}` } })).status,
    ).toBe(200);
    expect(
      (await fetch(`${d.url}api/queues/${name}`, { headers: { authorization: 'Bearer wrong' } })).status,
    ).toBe(401);

    // The token in the query would be in every request log: refused, whatever it is, no cookie.
    const inQuery = await fetch(`${d.url}queues/${name}?token=${TOKEN}`, { redirect: 'manual' });
    expect(inQuery.status).toBe(400);
    expect(inQuery.headers.get('set-cookie')).toBeNull();
    expect(await inQuery.text()).toMatch(/not accepted: servers write addresses to their logs/);
    // The sign-in page posts the token in the body (its script does so for a #token= link).
    const signInHtml = await (await fetch(`${d.url}queues/${name}`)).text();
    expect(signInHtml).toContain(`<input type="hidden" name="next" value="/queues/${name}">`);
    expect(signInHtml).toContain('<script src="/assets/signin.js" defer></script>');
    const signIn = (token: string, next: string) =>
      fetch(`${d.url}session`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, next }).toString(),
        redirect: 'manual',
      });
    const wrong = await signIn('not-the-token-at-all', `/queues/${name}`);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    // Back to the dashboard's own pages only, never to another site.
    for (const elsewhere of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
      expect((await signIn(TOKEN, elsewhere)).headers.get('location')).toBe('/');
    }
    const login = await signIn(TOKEN, `/queues/${name}`);
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe(`/queues/${name}`);
    const setCookie = login.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/HttpOnly; SameSite=Strict/);
    const cookie = setCookie.split(';')[0]!;
    const html = await (await fetch(`${d.url}queues/${name}`, { headers: { cookie } })).text();
    const csrf = /"csrf":"([^"]+)"/.exec(html)?.[1];
    expect(csrf).toBeTruthy();
    expect(html).toContain('"canAct":true');

    const retry = `${d.url}api/queues/${name}/jobs/y1/retry`;
    const host = new URL(d.url).host;
    const base = { cookie, 'content-type': 'application/json' };
    const refused = [
      await fetch(retry, { method: 'POST', headers: base, body: '{}' }),
      await fetch(retry, { method: 'POST', headers: { ...base, 'x-csrf-token': 'nope' }, body: '{}' }),
      await fetch(retry, {
        method: 'POST',
        headers: { ...base, 'x-csrf-token': csrf!, origin: 'https://evil.example' },
        body: '{}',
      }),
      await fetch(retry, {
        method: 'POST',
        headers: { ...base, 'x-csrf-token': csrf!, 'sec-fetch-site': 'cross-site' },
        body: '{}',
      }),
      await fetch(retry, {
        method: 'POST',
        headers: { cookie, 'x-csrf-token': csrf!, 'content-type': 'text/plain' },
        body: '{}',
      }),
    ];
    expect(refused.map((r) => r.status)).toEqual([403, 403, 403, 403, 403]);
    const r = inspector(redis.url());
    const keys = queueKeys(name);
    expect(await r.zcard(keys.dead)).toBe(2);

    const ok = await fetch(retry, {
      method: 'POST',
      headers: { ...base, 'x-csrf-token': csrf!, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' },
      body: '{}',
    });
    expect(ok.status).toBe(200);
    expect(await r.zrange(keys.dead, 0, -1)).toEqual(['y2']);
    expect(await r.zscore(keys.waiting, 'y1')).not.toBeNull();
    // A script with the bearer token needs no CSRF token (no ambient credentials to abuse).
    const del = await fetch(`${d.url}api/queues/${name}/jobs/y2/remove`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(del.status).toBe(200);
    expect(await r.exists(keys.dead)).toBe(0);
    expect(await r.hexists(keys.records, 'y2')).toBe(0);
    const again = await fetch(`${d.url}api/queues/${name}/jobs/y2/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(again.status).toBe(409);
    await r.quit();
  });

  it('cancels a running job: its signal aborts with CancelledError, and it shows as cancelled', async () => {
    const name = uniqueQueue('dcancel');
    const queue = new Queue(name, { connection: redis.url() });
    open.push(queue);
    let reason: unknown;
    let started = false;
    const worker = new Worker(
      name,
      (job) =>
        new Promise<void>((resolve) => {
          started = true;
          job.signal.addEventListener('abort', () => {
            reason = job.signal.reason as unknown;
            resolve();
          });
        }),
      { connection: redis.url() },
    );
    const errors: Error[] = [];
    worker.on('error', (err) => errors.push(err));
    open.push(worker);
    await queue.add('x', { id: 'run1' });
    await waitFor(async () => started && (await queue.get('run1'))?.state === 'active', {
      what: 'the job running',
    });
    const d = await dashboard({ token: TOKEN });
    const auth = { authorization: `Bearer ${TOKEN}` };
    // Remove leaves a running job alone; Cancel is the button for it.
    const removed = await fetch(`${d.url}api/queues/${name}/jobs/run1/remove`, {
      method: 'POST',
      headers: auth,
    });
    expect(removed.status).toBe(409);
    const cancelled = await fetch(`${d.url}api/queues/${name}/jobs/run1/cancel`, {
      method: 'POST',
      headers: auth,
    });
    expect(cancelled.status).toBe(200);
    await waitFor(() => reason !== undefined, { what: 'the signal to abort' });
    expect((reason as Error).name).toBe('CancelledError');
    const job = (await (
      await fetch(`${d.url}api/queues/${name}/jobs/run1`, { headers: auth })
    ).json()) as Record<string, unknown>;
    expect(job).toMatchObject({ id: 'run1', state: 'cancelled' });
    const again = await fetch(`${d.url}api/queues/${name}/jobs/run1/cancel`, {
      method: 'POST',
      headers: auth,
    });
    expect(again.status).toBe(409);
    const list = (await (
      await fetch(`${d.url}api/queues/${name}/jobs?state=cancelled`, { headers: auth })
    ).json()) as { total: number; items: Array<{ id: string; cancelledAt: number | null }> };
    expect(list.total).toBe(1);
    expect(list.items).toEqual([
      expect.objectContaining({ id: 'run1', cancelledAt: expect.any(Number) as unknown }),
    ]);
  });

  it('lists completed jobs with their kept result, and shows a job’s priority', async () => {
    const name = uniqueQueue('ddone');
    const queue = new Queue<{ n: number }>(name, { connection: redis.url() });
    open.push(queue);
    await queue.add({ n: 1 }, { id: 'urgent', delay: '1h', priority: -3 });
    await queue.add({ n: 2 }, { id: 'plain', delay: '2h' });
    // Two completed records as an ack writes them: one with the handler's result (keepCompleted),
    // one without.
    const r = inspector(redis.url());
    const keys = queueKeys(name);
    const now = await serverNow(r);
    await r
      .multi()
      .hset(keys.records, 'with', completedRecordWithResult(jsonCodec.encodePayload({ sent: true })))
      .hset(keys.records, 'without', COMPLETED_RECORD)
      .zadd(keys.completed, now - 2_000, 'with', now - 1_000, 'without')
      .exec();
    await r.quit();
    const d = await dashboard();
    const get = async <T>(path: string): Promise<T> =>
      (await (await fetch(`${d.url}api/${path}`)).json()) as T;

    const overview = await get<{ counts: Record<string, number> }>(`queues/${name}`);
    expect(overview.counts).toMatchObject({ scheduled: 2, completed: 2, cancelled: 0 });
    const done = await get<{ total: number; items: Array<Record<string, unknown>> }>(
      `queues/${name}/jobs?state=completed`,
    );
    expect(done.total).toBe(2);
    // Most recent first; the result is the preview of the one that kept it.
    expect(done.items.map((j) => [j.id, j['hasResult'], j['preview']])).toEqual([
      ['without', false, ''],
      ['with', true, '{"sent":true}'],
    ]);
    expect(await get(`queues/${name}/jobs/with`)).toMatchObject({
      id: 'with',
      state: 'completed',
      result: { sent: true },
      completedAt: expect.any(String) as unknown,
    });
    const waiting = await get<{ items: Array<{ id: string; priority: number }> }>(
      `queues/${name}/jobs?state=scheduled`,
    );
    expect(waiting.items.map((j) => [j.id, j.priority])).toEqual([
      ['urgent', -3],
      ['plain', 0],
    ]);
    expect(await get(`queues/${name}/jobs/urgent`)).toMatchObject({ priority: -3, payload: { n: 1 } });
    const html = await (await fetch(`${d.url}queues/${name}`)).text();
    expect(html).toContain('id="table-completed"');
    expect(html).toContain('id="table-cancelled"');
  });

  it('pauses and resumes a queue from its page: the button, the paused badge, and paused in the data', async () => {
    const name = uniqueQueue('d');
    const queue = await seed(name, 1, []);
    const d = await dashboard({ token: TOKEN });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const html = await (await fetch(`${d.url}queues/${name}`, { headers: auth })).text();
    expect(html).toContain('id="pause-toggle"');
    expect(html).toContain('id="paused-badge"');
    const overview = async (): Promise<unknown> =>
      (await fetch(`${d.url}api/queues/${name}`, { headers: auth })).json();
    const listed = async (): Promise<unknown> =>
      (
        (await (await fetch(`${d.url}api/queues`, { headers: auth })).json()) as {
          queues: Array<{ name: string }>;
        }
      ).queues.find((q) => q.name === name);
    expect(await overview()).toMatchObject({ paused: false });

    const paused = await fetch(`${d.url}api/queues/${name}/pause`, { method: 'POST', headers: auth });
    expect(paused.status).toBe(200);
    expect(await paused.json()).toEqual({ ok: true, paused: true });
    expect(await queue.isPaused()).toBe(true);
    expect(await overview()).toMatchObject({ paused: true });
    expect(await listed()).toMatchObject({ name, paused: true });

    const resumed = await fetch(`${d.url}api/queues/${name}/resume`, { method: 'POST', headers: auth });
    expect(resumed.status).toBe(200);
    expect(await queue.isPaused()).toBe(false);
    expect(await overview()).toMatchObject({ paused: false });
  });

  it('read-only hides and refuses actions', async () => {
    const name = uniqueQueue('d');
    await seed(name, 0, ['z1']);
    const d = await dashboard({ token: TOKEN, readOnly: true });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const html = await (await fetch(`${d.url}queues/${name}`, { headers: auth })).text();
    expect(html).toContain('"canAct":false');
    expect(html).toContain('"readOnly":true');
    const res = await fetch(`${d.url}api/queues/${name}/dead/retry-all`, { method: 'POST', headers: auth });
    expect(res.status).toBe(403);
    expect(html).not.toContain('id="pause-toggle"');
    const pause = await fetch(`${d.url}api/queues/${name}/pause`, { method: 'POST', headers: auth });
    expect(pause.status).toBe(403);
    const r = inspector(redis.url());
    expect(await r.zcard(queueKeys(name).dead)).toBe(1);
    expect(await r.exists(queueKeys(name).paused)).toBe(0);
    await r.quit();
  });

  it('shows a partitioned queue once, with counts, due times and pages merged over its partitions', async () => {
    const name = uniqueQueue('parts');
    const queue = new Queue<number>(name, { connection: redis.url(), partitions: 4 });
    open.push(queue);
    // Due 1..30 minutes ahead, over all four partitions (random ids).
    await queue.addBulk(
      Array.from({ length: 30 }, (_, i) => ({ payload: i, opts: { delay: (i + 1) * 60_000 } })),
    );
    const server = await dashboard();
    const get = async <R>(path: string): Promise<R> =>
      (await (await fetch(new URL(path, server.url))).json()) as R;
    const { queues } = await get<{ queues: Array<{ name: string; counts: { scheduled: number } }> }>(
      '/api/queues',
    );
    expect(queues.filter((q) => q.name.startsWith(name))).toEqual([
      {
        name,
        counts: { scheduled: 30, due: 0, held: 0, waitingChildren: 0, active: 0, dead: 0 },
        strategy: expect.stringMatching(/^(zpopmin|range)$/) as unknown,
        paused: false,
      },
    ]);
    const overview = await get<{ nextDue: number; due: { counts: number[] } }>(`api/queues/${name}`);
    expect(overview.due.counts.reduce((a, b) => a + b, 0)).toBe(30);
    // One job in each of the first 30 one-minute slices (due 1..30 minutes ahead, each at the end of its slice).
    expect(overview.due.counts.slice(0, 30).every((n) => n === 1)).toBe(true);
    expect(overview.nextDue).toBe((await queue.list('scheduled', { limit: 1 }))[0]!.runAt.getTime());
    const page = await get<{ total: number; items: Array<{ preview: string }> }>(
      `api/queues/${name}/jobs?state=scheduled&offset=5&limit=10`,
    );
    expect(page.total).toBe(30);
    expect(page.items.map((j) => j.preview)).toEqual(['5', '6', '7', '8', '9', '10', '11', '12', '13', '14']);
  });

  it("the inspector shows a msgpack job's payload, decoded with the queue's recorded codec", async () => {
    const name = uniqueQueue('mp');
    const queue = new Queue<{ to: string; at: Date }>(name, { connection: redis.url(), codec: 'msgpack' });
    open.push(queue);
    await queue.add({ to: 'a@b.c', at: new Date(5) }, { id: 'm1', delay: '1h' });
    const server = await dashboard();
    const job = (await (await fetch(new URL(`api/queues/${name}/jobs/m1`, server.url))).json()) as {
      payload: unknown;
      decodeError?: string;
    };
    expect(job.decodeError).toBeUndefined();
    expect(job.payload).toMatchObject({ to: 'a@b.c' });
    const page = (await (
      await fetch(new URL(`api/queues/${name}/jobs?state=scheduled`, server.url))
    ).json()) as {
      items: Array<{ id: string; preview: string }>;
    };
    expect(page.items.map((j) => j.id)).toEqual(['m1']);
    expect(page.items[0]!.preview).toContain('a@b.c');
  });

  it("decodes a custom codec's jobs with createDashboard's codec option, and names the option without it", async () => {
    const name = uniqueQueue('custom');
    const codec: Codec = {
      name: 'hexjson',
      encodePayload: (payload) => Buffer.from(Buffer.from(JSON.stringify(payload)).toString('hex')),
      decodePayload: (bytes) => JSON.parse(Buffer.from(bytes.toString(), 'hex').toString()) as unknown,
    };
    const queue = new Queue<{ n: number }>(name, { connection: redis.url(), codec });
    open.push(queue);
    await queue.add({ n: 41 }, { id: 'h1', delay: '1h' });
    const job = async (server: DashboardServer) =>
      (await (await fetch(new URL(`api/queues/${name}/jobs/h1`, server.url))).json()) as {
        payload?: unknown;
        decodeError?: string;
      };
    const without = await job(await dashboard());
    expect(without.payload ?? null).toBeNull();
    expect(without.decodeError).toMatch(/codec 'hexjson'.*createDashboard\(\{ codec \}\)/);
    const withCodec = await job(await dashboard({ codec }));
    expect(withCodec).toMatchObject({ payload: { n: 41 } });
    expect(withCodec.decodeError).toBeUndefined();
  });

  it('shows next due and the due chart of a wheel queue; lists an empty queue; 404s an unknown one', async () => {
    const name = uniqueQueue('wheel');
    const queue = new Queue<number>(name, { connection: redis.url(), strategy: 'wheel' });
    open.push(queue);
    const [soon] = await queue.addBulk([
      { payload: 1, opts: { delay: 150_000 } },
      { payload: 2, opts: { delay: 630_000 } },
    ]);
    const empty = uniqueQueue('empty');
    const known = new Queue(empty, { connection: redis.url() });
    open.push(known);
    await known.counts();
    const server = await dashboard();
    const get = async <R>(path: string): Promise<R> =>
      (await (await fetch(new URL(path, server.url))).json()) as R;
    const overview = await get<{
      nextDue: number;
      strategy: string;
      due: { overdue: number; counts: number[] };
    }>(`api/queues/${name}`);
    // Next due: the end of the job's wheel bucket, at most one bucket (1 s) after its due time.
    expect(overview.nextDue).toBeGreaterThanOrEqual(soon!.runAt.getTime());
    expect(overview.nextDue).toBeLessThanOrEqual(soon!.runAt.getTime() + 1_000);
    expect(overview.strategy).toBe('wheel (1000 ms buckets)');
    // Slices of a minute: 150 s ahead falls in the third, 630 s in the eleventh.
    expect(overview.due.overdue).toBe(0);
    expect(overview.due.counts.reduce((a, b) => a + b, 0)).toBe(2);
    expect(overview.due.counts[2]).toBe(1);
    expect(overview.due.counts[10]).toBe(1);
    const { queues } = await get<{ queues: Array<{ name: string; counts: { scheduled: number } }> }>(
      'api/queues',
    );
    expect(queues.find((q) => q.name === empty)).toMatchObject({ counts: { scheduled: 0 } });
    const missing = await fetch(new URL(`api/queues/${uniqueQueue('typo')}`, server.url));
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: string }).error).toMatch(/no queue 'typo-[0-9a-f]+' here/);
  });

  it('answers 503 naming the Redis it cannot reach, at once', async () => {
    const port = await freePort();
    const server = await dashboard({ connection: `redis://127.0.0.1:${port}` });
    const started = Date.now();
    for (const path of ['api/queues', 'api/queues/emails']) {
      const res = await fetch(new URL(path, server.url));
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toMatch(
        new RegExp(`^redis: cannot reach Redis at redis://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`),
      );
    }
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('mounts under a base path in a user server and passes other paths on', async () => {
    const name = uniqueQueue('d');
    await seed(name, 2, []);
    const mounted = createDashboard({ connection: redis.url(), basePath: '/ops/delayq/' });
    open.push(mounted);
    const server = createServer((req, res) =>
      mounted.handler(req, res, () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('app');
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    open.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect(await (await fetch(`${base}/elsewhere`)).text()).toBe('app');
    const data = (await (await fetch(`${base}/ops/delayq/api/queues/${name}`)).json()) as {
      counts: { scheduled: number };
    };
    expect(data.counts.scheduled).toBe(2);
    const html = await (await fetch(`${base}/ops/delayq/queues/${name}`)).text();
    expect(html).toContain('src="/ops/delayq/assets/app.js"');
    const js = await fetch(`${base}/ops/delayq/assets/app.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  });
});
