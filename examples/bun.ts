/**
 * delayq under Bun, unchanged: a producer and a worker, then the dashboard served by Bun.serve
 * through `dashboard.fetch`. Starts a throwaway redis-server of its own (never 127.0.0.1:6379) and
 * ends by itself.
 *
 *   npx bun examples/bun.ts
 *
 * In your project the imports are `from 'delayq'` and `from 'delayq/dashboard'` (bun add delayq).
 */
import { Queue, Worker } from '../src/index.js';
import { createDashboard } from '../src/dashboard/index.js';
import { startRedis } from '../src/testing/index.js';

// Bun's global, declared here so that tsc checks this file without Bun's type package.
declare const Bun: {
  version: string;
  serve(options: { hostname: string; port: number; fetch(request: Request): Response | Promise<Response> }): {
    port: number;
    stop(): Promise<void>;
  };
};

interface Email {
  to: string;
}

const redis = await startRedis();
const REDIS_URL = redis.url;
const DASHBOARD_TOKEN = 'example-dashboard-token-0123';
const PORT = Number(process.env['PORT'] ?? 0); // 0: any free port
try {
  const queue = new Queue<Email>('emails', { connection: REDIS_URL });
  const sent: string[] = [];
  const worker = new Worker<Email>(
    'emails',
    async (job) => {
      if (job.attempt === 1 && job.payload.to.startsWith('flaky')) throw new Error('smtp 451');
      sent.push(`${job.payload.to} (attempt ${job.attempt})`);
    },
    { connection: REDIS_URL, backoff: () => 50 },
  );
  await queue.add({ to: 'ada@example.com' }, { delay: '100ms' });
  await queue.add({ to: 'flaky@example.com' }, { attempts: 3 });

  const dashboard = createDashboard({
    connection: REDIS_URL,
    basePath: '/admin/queues',
    token: DASHBOARD_TOKEN,
  });
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: PORT,
    fetch: (request) =>
      new URL(request.url).pathname.startsWith('/admin/queues')
        ? dashboard.fetch(request)
        : new Response('app'),
  });

  const deadline = Date.now() + 10_000;
  while (sent.length < 2) {
    if (Date.now() > deadline) throw new Error(`only ${sent.length} jobs done in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const api = await fetch(`http://127.0.0.1:${server.port}/admin/queues/api/queues/emails`, {
    headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` },
  });
  console.log(`bun ${Bun.version}: sent ${sent.join(', ')}; dashboard API ${api.status}`);
  if (api.status !== 200) throw new Error(await api.text());

  await server.stop();
  await dashboard.close();
  await worker.close();
  await queue.close();
} finally {
  await redis.stop();
}
