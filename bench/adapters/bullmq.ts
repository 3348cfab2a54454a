/**
 * BullMQ behind the bench interface. Its defaults, except removeOnComplete: true (BullMQ keeps
 * every completed job by default; delayq and bee-queue as configured here keep none).
 */
import { Queue, Worker } from 'bullmq';
import {
  hostPort,
  SHORT_LEASE_MS,
  type Adapter,
  type AdapterOptions,
  type BenchPayload,
  type NewJob,
  type RunningWorker,
  type WorkerSpec,
} from './adapter.js';

const JOB_NAME = 'bench';

/** A BullMQ queue for one run. */
export function createBullmq({ url, queue: name }: AdapterOptions): Adapter {
  const connection = hostPort(url);
  const queue = new Queue<BenchPayload>(name, {
    connection,
    defaultJobOptions: { removeOnComplete: true },
  });
  const opts = (job: NewJob) => (job.delayMs > 0 ? { delay: job.delayMs } : {});
  return {
    system: 'bullmq',
    async add(job) {
      await queue.add(JOB_NAME, job.payload, opts(job));
    },
    async addBulk(jobs) {
      await queue.addBulk(jobs.map((job) => ({ name: JOB_NAME, data: job.payload, opts: opts(job) })));
    },
    async startWorker(spec: WorkerSpec): Promise<RunningWorker> {
      const worker = new Worker<BenchPayload>(
        name,
        (job) => spec.handler({ payload: job.data, serverLatenessMs: null }),
        {
          connection: { ...connection, maxRetriesPerRequest: null },
          concurrency: spec.concurrency,
          ...(spec.settings === 'short' && { lockDuration: SHORT_LEASE_MS, stalledInterval: SHORT_LEASE_MS }),
        },
      );
      worker.on('completed', () => spec.onCompleted());
      worker.on('error', (err) => console.error(`bullmq worker: ${err.message}`));
      await worker.waitUntilReady();
      return { close: () => worker.close(true) };
    },
    close: () => queue.close(),
  };
}
