/**
 * The same package from a CommonJS file (require under TypeScript's nodenext): each entry point
 * resolves and its types are usable. Type-checked by test/package/packed.test.ts, not run.
 */
import { Queue, Worker, type Job } from 'delayq';
import { createDashboard } from 'delayq/dashboard';
import { DelayqMetrics } from 'delayq/metrics';
import { runHandler } from 'delayq/testing';
import { DelayqModule } from 'delayq/nestjs';

const queue = new Queue<{ n: number }>('numbers', { connection: 'redis://127.0.0.1:6390' });
const worker = new Worker<{ n: number }>('numbers', async (job: Job<{ n: number }>) => job.payload.n * 2, {
  connection: 'redis://127.0.0.1:6390',
});
const dashboard = createDashboard({ connection: 'redis://127.0.0.1:6390', basePath: '/q' });
new DelayqMetrics().observeQueue(queue);
void runHandler(async (job: Job<{ n: number }>) => job.payload.n, { n: 1 });
export const parts = [
  queue,
  worker,
  dashboard,
  DelayqModule.forRoot({ connection: 'redis://127.0.0.1:6390' }),
];
