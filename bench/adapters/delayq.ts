/** delayq behind the bench interface, with its defaults (leases 15 s, no completed-job retention). */
import { Queue, Worker } from '../../src/index.js';
import {
  SHORT_LEASE_MS,
  type Adapter,
  type AdapterOptions,
  type BenchPayload,
  type NewJob,
  type RunningWorker,
  type WorkerSpec,
} from './adapter.js';

/** A delayq queue for one run. */
export function createDelayq({ url, queue: name }: AdapterOptions): Adapter {
  const queue = new Queue<BenchPayload>(name, { connection: url });
  const toBulk = (job: NewJob) =>
    job.delayMs > 0 ? { payload: job.payload, opts: { delay: job.delayMs } } : { payload: job.payload };
  return {
    system: 'delayq',
    async add(job) {
      await queue.addBulk([toBulk(job)]);
    },
    async addBulk(jobs) {
      await queue.addBulk(jobs.map(toBulk));
    },
    async startWorker(spec: WorkerSpec): Promise<RunningWorker> {
      const worker = new Worker<BenchPayload>(
        name,
        (job) =>
          spec.handler({
            payload: job.payload,
            serverLatenessMs: job.claimedAt.getTime() - job.runAt.getTime(),
          }),
        {
          connection: url,
          concurrency: spec.concurrency,
          ...(spec.settings === 'short' && { leaseMs: SHORT_LEASE_MS }),
        },
      );
      worker.on('completed', () => spec.onCompleted());
      worker.on('error', (err) => console.error(`delayq worker: ${err.message}`));
      await worker.waitUntilReady();
      return { close: () => worker.close({ timeoutMs: 1_000 }) };
    },
    close: () => queue.close(),
  };
}
