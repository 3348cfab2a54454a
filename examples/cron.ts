/**
 * Repeating jobs: declare schedules on a queue, run a Scheduler and a Worker, watch a few
 * occurrences run, then stop. Starts a throwaway redis-server of its own (never 127.0.0.1:6379)
 * and ends by itself.
 *
 *   npx tsx examples/cron.ts
 *
 * In your project the imports are `from 'delayq'` and `from 'delayq/testing'`.
 */
import { Queue, Worker } from '../src/index.js';
import { Scheduler } from '../src/scheduler.js';
import { startRedis } from '../src/testing/index.js';

interface Task {
  kind: 'heartbeat' | 'digest';
}

const redis = await startRedis();
try {
  const queue = new Queue<Task>('maintenance', { connection: redis.url });

  // Every process may declare its schedules at start-up: the same declaration again changes nothing.
  const heartbeat = await queue.schedule('heartbeat', { every: '500ms' }, { kind: 'heartbeat' });
  await queue.schedule(
    'weekday-digest',
    { cron: '0 9 * * 1-5', tz: 'Europe/Paris' },
    { kind: 'digest' },
    { missed: 'runOnce', attempts: 5 },
  );
  console.log(`heartbeat declared (${heartbeat.status}); first at ${heartbeat.next.toISOString()}`);
  for (const s of await queue.schedules()) {
    console.log(`  ${s.name.padEnd(15)} ${JSON.stringify(s.spec).padEnd(45)} next ${s.next?.toISOString()}`);
  }

  // Run one Scheduler per process that should keep schedules going (any number is safe), and workers.
  const scheduler = new Scheduler(queue);
  await scheduler.start();
  let heartbeats = 0;
  const worker = new Worker<Task>(
    'maintenance',
    async (job) => {
      const lateMs = Date.now() - job.runAt.getTime();
      console.log(`ran ${job.id} (${job.payload.kind}), ${lateMs} ms after its due time by this clock`);
      if (job.payload.kind === 'heartbeat') heartbeats++;
    },
    { connection: redis.url },
  );
  await worker.waitUntilReady();

  const deadline = Date.now() + 10_000;
  while (heartbeats < 4) {
    if (Date.now() > deadline) throw new Error(`only ${heartbeats} heartbeats ran in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  await scheduler.stop();
  await worker.close();
  console.log(`unschedule heartbeat: ${await queue.unschedule('heartbeat')}`);
  console.log(`left: ${(await queue.schedules()).map((s) => s.name).join(', ')}`);
  await queue.close();
} finally {
  await redis.stop();
}
