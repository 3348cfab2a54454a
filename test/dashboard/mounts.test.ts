/**
 * The dashboard mounted under a sub-path in the servers users run: Express and Fastify through
 * `.handler`, Hono, Bun.serve and Deno.serve through `.fetch`. One scenario runs against every
 * mount: a page and an API read with the token, unauthenticated reads and POSTs refused, a cookie
 * session whose cross-site POST is refused and whose same-origin POST acts, and the host app's own
 * routes left alone.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue } from '../../src/index.js';
import { createDashboard, type Dashboard } from '../../src/dashboard/handler.js';
import { queueKeys } from '../../src/redis/keys.js';
import { awaitReady, captureOutput, type ReadyLine } from '../support/ready-line.js';
import { inspector, uniqueQueue, useRedis } from '../support/fixtures.js';

const redis = useRedis();
const TOKEN = 'mount-test-token-0123456789';
const BASE = '/admin/queues';
const BIN = fileURLToPath(new URL('../../node_modules/.bin/', import.meta.url));
const SERVE = fileURLToPath(new URL('../runtimes/serve-dashboard.ts', import.meta.url));
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/** Start a server holding the dashboard at BASE and answering `app` on /health; resolves to its origin. */
type Mount = (dashboard: Dashboard) => Promise<string>;

function listening(server: Server): string {
  open.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Run the dashboard fixture under Bun or Deno; resolves to its origin once it listens. */
async function runtimeMount(command: string, args: string[]): Promise<string> {
  const child = spawn(command, args, {
    env: { ...process.env, REDIS_URL: redis.url(), DASHBOARD_TOKEN: TOKEN, BASE_PATH: BASE },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  open.push({
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  });
  const ready = await awaitReady(child, exited, captureOutput(child), {
    what: `dashboard under ${command}`,
    timeoutMs: 20_000,
  });
  return `http://127.0.0.1:${(ready as ReadyLine & { port: number }).port}`;
}

const mounts: Record<string, Mount> = {
  async express(dashboard) {
    const app = express();
    // A body parser before the dashboard, as many apps have: the handler must still read POSTs.
    app.use(express.json());
    app.use(BASE, dashboard.handler);
    app.get('/health', (_req, res) => {
      res.send('app');
    });
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return listening(server);
  },
  async fastify(dashboard) {
    const app = Fastify();
    // onRequest runs before Fastify parses a body, so the dashboard reads the raw request itself.
    app.addHook('onRequest', (request, reply, done) => {
      if (request.url !== BASE && !request.url.startsWith(`${BASE}/`)) return done();
      reply.hijack();
      dashboard.handler(request.raw, reply.raw);
    });
    app.get('/health', () => 'app');
    await app.listen({ port: 0, host: '127.0.0.1' });
    open.push({ close: () => app.close() });
    return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  },
  async hono(dashboard) {
    const app = new Hono();
    // app.mount() strips the prefix before calling the handler; .fetch takes that form too.
    app.mount(BASE, dashboard.fetch);
    app.get('/health', (c) => c.text('app'));
    const server = await new Promise<Server>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s as Server));
    });
    return listening(server);
  },
  // The dashboard's own .fetch under each runtime's server: see test/runtimes/serve-dashboard.ts.
  'Bun.serve': () => runtimeMount(`${BIN}bun`, [SERVE]),
  // --sloppy-imports: the fixture imports the TypeScript sources by their .js names.
  'Deno.serve': () =>
    runtimeMount(`${BIN}deno`, ['run', '-A', '--node-modules-dir=manual', '--sloppy-imports', SERVE]),
};

describe.each(Object.entries(mounts))('dashboard mounted at %s', (_, mount) => {
  it('serves a page and the API under the sub-path, and refuses what it must', async () => {
    const name = uniqueQueue('m');
    const queue = new Queue(name, { connection: redis.url() });
    open.push(queue);
    await queue.add({ n: 1 }, { id: 'j1', delay: 60_000 });
    await queue.add({ n: 2 }, { id: 'j2', delay: 60_000 });
    const dashboard = createDashboard({ connection: redis.url(), token: TOKEN, basePath: BASE });
    open.push(dashboard);
    const origin = await mount(dashboard);
    const at = `${origin}${BASE}`;
    const bearer = { authorization: `Bearer ${TOKEN}` };

    expect(await (await fetch(`${origin}/health`)).text()).toBe('app');

    const page = await fetch(`${at}/queues/${name}`, { headers: bearer });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain(`src="${BASE}/assets/app.js"`);
    const asset = await fetch(`${at}/assets/app.css`, { headers: bearer });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toBe('text/css; charset=utf-8');

    const read = await fetch(`${at}/api/queues/${name}`, { headers: bearer });
    expect(read.status).toBe(200);
    expect(((await read.json()) as { counts: unknown }).counts).toEqual({
      scheduled: 2,
      due: 0,
      held: 0,
      active: 0,
      dead: 0,
      completed: 0,
      cancelled: 0,
      waitingChildren: 0,
    });

    expect((await fetch(`${at}/api/queues/${name}`)).status).toBe(401);
    const cancel = `${at}/api/queues/${name}/jobs/j1/cancel`;
    const json = { 'content-type': 'application/json' };
    const anonymous = await fetch(cancel, { method: 'POST', headers: json, body: '{}' });
    expect(anonymous.status).toBe(401);

    // A browser session: the sign-in form (which a #token= link fills) sets a cookie scoped to
    // the mount path, and goes back to the page under it.
    const login = await fetch(`${at}/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: TOKEN, next: `${BASE}/queues/${name}` }).toString(),
      redirect: 'manual',
    });
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe(`${BASE}/queues/${name}`);
    const setCookie = login.headers.get('set-cookie') ?? '';
    expect(setCookie).toContain(`Path=${BASE};`);
    const cookie = setCookie.split(';')[0]!;
    const html = await (await fetch(`${at}/queues/${name}`, { headers: { cookie } })).text();
    const csrf = /"csrf":"([^"]+)"/.exec(html)?.[1] ?? '';
    expect(csrf).not.toBe('');
    const crossSite = await fetch(cancel, {
      method: 'POST',
      headers: { ...json, cookie, 'x-csrf-token': csrf, origin: 'https://evil.example' },
      body: '{}',
    });
    expect(crossSite.status).toBe(403);
    const noToken = await fetch(cancel, { method: 'POST', headers: { ...json, cookie }, body: '{}' });
    expect(noToken.status).toBe(403);

    const r = inspector(redis.url());
    try {
      expect(await r.zscore(queueKeys(name).waiting, 'j1')).not.toBeNull();
      const ok = await fetch(cancel, {
        method: 'POST',
        headers: { ...json, cookie, 'x-csrf-token': csrf, origin, 'sec-fetch-site': 'same-origin' },
        body: '{}',
      });
      expect(ok.status).toBe(200);
      expect(await r.zscore(queueKeys(name).waiting, 'j1')).toBeNull();
      expect(await r.zscore(queueKeys(name).waiting, 'j2')).not.toBeNull();
    } finally {
      await r.quit();
    }
  });
});

describe('dashboard.fetch', () => {
  it('refuses an oversized action body and answers HEAD without a body', async () => {
    const dashboard = createDashboard({ connection: redis.url(), token: TOKEN, basePath: BASE });
    open.push(dashboard);
    const bearer = { authorization: `Bearer ${TOKEN}` };
    const big = await dashboard.fetch(
      new Request(`http://127.0.0.1${BASE}/api/queues/x/dead/retry-all`, {
        method: 'POST',
        headers: bearer,
        body: 'x'.repeat(64 * 1024),
      }),
    );
    expect(big.status).toBe(413);
    expect(big.headers.get('x-frame-options')).toBe('DENY');
    const head = await dashboard.fetch(
      new Request(`http://127.0.0.1${BASE}/`, { method: 'HEAD', headers: bearer }),
    );
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });
});

describe('dashboard.handler mounted at a path it was not told of', () => {
  it('says which basePath to pass instead of answering a silent 404', async () => {
    const dashboard = createDashboard({ connection: redis.url(), token: TOKEN });
    open.push(dashboard);
    const app = express();
    app.use(BASE, dashboard.handler);
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = listening(server);
    for (const path of [`${BASE}`, `${BASE}/`, `${BASE}/api/queues`]) {
      const res = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status, path).toBe(500);
      expect(((await res.json()) as { error: string }).error).toBe(
        `the dashboard is mounted at '${BASE}' but its basePath is '': pass basePath: '${BASE}' to createDashboard()`,
      );
    }
  });
});
