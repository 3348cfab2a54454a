/**
 * The dashboard and the metrics mounted in the servers users run, each at /admin/queues:
 * Express and Fastify through `dashboard.handler` (node:http), Hono and a Next.js route handler
 * (examples/next-route.ts) through `dashboard.fetch` (Request -> Response). Each mount is then asked for a page, an API read
 * and an unauthenticated POST (refused). Starts a throwaway redis-server of its own (never
 * 127.0.0.1:6379) and ends by itself.
 *
 *   npx tsx examples/servers.ts
 *
 * In your project the imports are `from 'delayq'`, `from 'delayq/dashboard'` and
 * `from 'delayq/metrics'`.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { Registry } from 'prom-client';
import { Queue } from '../src/index.js';
import { createDashboard } from '../src/dashboard/index.js';
import { metricsFetch, metricsHandler, registerMetrics } from '../src/metrics/index.js';
import { startRedis } from '../src/testing/index.js';

const redis = await startRedis();
const REDIS_URL = redis.url;
const DASHBOARD_TOKEN = 'example-dashboard-token-0123'; // at least 16 characters; keep it secret
const closing: Array<() => Promise<unknown>> = [];

interface Email {
  to: string;
}

// --- Express ------------------------------------------------------------------------------
async function withExpress(queue: Queue<Email>): Promise<string> {
  const app = express();
  const dashboard = createDashboard({
    connection: REDIS_URL,
    basePath: '/admin/queues',
    token: DASHBOARD_TOKEN,
  });
  const registry = new Registry(); // your app's prom-client registry
  registerMetrics(registry).observeQueue(queue); // delayq's metrics beside yours
  app.use('/admin/queues', dashboard.handler); // req.originalUrl keeps the prefix Express strips
  app.get('/metrics', metricsHandler(registry));
  const server = app.listen(0, '127.0.0.1');
  closing.push(
    () => dashboard.close(),
    () => closeServer(server),
  );
  await new Promise((resolve) => server.once('listening', resolve));
  const scrape = await (await fetch(`${listening(server)}/metrics`)).text();
  if (!scrape.includes('delayq_scheduled_jobs{queue="emails"} 2')) throw new Error(`metrics: ${scrape}`);
  return listening(server);
}

// --- Fastify ------------------------------------------------------------------------------
async function withFastify(queue: Queue<Email>): Promise<string> {
  const dashboard = createDashboard({
    connection: REDIS_URL,
    basePath: '/admin/queues',
    token: DASHBOARD_TOKEN,
  });
  const app = Fastify();
  // onRequest runs before Fastify reads the body, so the dashboard gets the raw request.
  app.addHook('onRequest', (request, reply, done) => {
    if (!request.url.startsWith('/admin/queues')) return done();
    reply.hijack();
    dashboard.handler(request.raw, reply.raw);
  });
  const registry = new Registry();
  registerMetrics(registry).observeQueue(queue);
  const serveMetrics = metricsHandler(registry);
  app.get('/metrics', (request, reply) => {
    reply.hijack(); // the node:http handler writes the response itself
    serveMetrics(request.raw, reply.raw);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  closing.push(
    () => dashboard.close(),
    () => app.close(),
  );
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const scrape = await (await fetch(`${origin}/metrics`)).text();
  if (!scrape.includes('delayq_scheduled_jobs{queue="emails"} 2')) throw new Error(`metrics: ${scrape}`);
  return origin;
}

// --- Hono ---------------------------------------------------------------------------------
async function withHono(queue: Queue<Email>): Promise<string> {
  const dashboard = createDashboard({
    connection: REDIS_URL,
    basePath: '/admin/queues',
    token: DASHBOARD_TOKEN,
  });
  const app = new Hono();
  const registry = new Registry();
  registerMetrics(registry).observeQueue(queue);
  app.mount('/admin/queues', dashboard.fetch);
  app.get('/metrics', (c) => metricsFetch(registry)(c.req.raw));
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  closing.push(
    () => dashboard.close(),
    () => closeServer(server as Server),
  );
  await new Promise((resolve) => server.once('listening', resolve));
  return listening(server as Server);
}

function listening(server: Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** A page and an API read with the token, and an unauthenticated POST, through `send`. */
async function check(
  what: string,
  send: (path: string, init?: RequestInit) => Promise<Response>,
): Promise<void> {
  const bearer = { authorization: `Bearer ${DASHBOARD_TOKEN}` };
  const page = await send('/admin/queues/queues/emails', { headers: bearer });
  const api = await send('/admin/queues/api/queues/emails', { headers: bearer });
  const { counts } = (await api.json()) as { counts: { scheduled: number } };
  const post = await send('/admin/queues/api/queues/emails/dead/retry-all', { method: 'POST' });
  console.log(
    `${what.padEnd(8)} page ${page.status}, ${counts.scheduled} scheduled, POST without token ${post.status}`,
  );
  if (page.status !== 200 || counts.scheduled !== 2 || post.status !== 401)
    throw new Error(`${what}: unexpected`);
}

try {
  const queue = new Queue<Email>('emails', { connection: REDIS_URL });
  closing.push(() => queue.close());
  await queue.add({ to: 'ada@example.com' }, { delay: '10m' });
  await queue.add({ to: 'bob@example.com' }, { delay: '1h' });

  for (const [what, mount] of [
    ['express', withExpress],
    ['fastify', withFastify],
    ['hono', withHono],
  ] as const) {
    const origin = await mount(queue);
    await check(what, (path, init) => fetch(`${origin}${path}`, init));
  }
  // The route module reads its settings from the environment, as a Next.js app would.
  process.env['REDIS_URL'] = REDIS_URL;
  process.env['DASHBOARD_TOKEN'] = DASHBOARD_TOKEN;
  const next = await import('./next-route.js');
  closing.push(() => next.dashboard.close());
  await check('next.js', (path, init) => {
    const request = new Request(`http://127.0.0.1:3000${path}`, init);
    return request.method === 'POST' ? next.POST(request) : next.GET(request);
  });
} finally {
  for (const close of closing.reverse()) await close();
  await redis.stop();
}
