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
  serve(options: { port: number; fetch(request: Request): Response | Promise<Response> }): {
    port: number;
    stop(): Promise<void>;
  };
};

interface Email {
  to: string;
}

const redis = await startRedis();
try {
  const queue = new Queue<Email>('emails', { connection: redis.url });
  const sent: string[] = [];
  const worker = new Worker<Email>(
    'emails',
    async (job) => {
      if (job.attempt === 1 && job.payload.to.startsWith('flaky')) throw new Error('smtp 451');
      sent.push(`${job.payload.to} (attempt ${job.attempt})`);
    },
    { connection: redis.url, backoff: () => 50 },
  );
  await queue.add({ to: 'ada@example.com' }, { delay: '100ms' });
  await queue.add({ to: 'flaky@example.com' }, { attempts: 3 });

  const dashboard = createDashboard({
    connection: redis.url,
    basePath: '/admin/queues',
    token: 'example-dashboard-token-0123',
  });
  const server = Bun.serve({
    port: 0,
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
    headers: { authorization: 'Bearer example-dashboard-token-0123' },
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
