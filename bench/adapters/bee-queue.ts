/**
 * bee-queue behind the bench interface. Its defaults, except: removeOnSuccess: true (it keeps
 * succeeded jobs by default), activateDelayedJobs: true on the worker (without it delayed jobs never
 * run), getEvents: false (nobody here listens to job events; sendEvents stays on, as by default),
 * and storeJobs: false on the producer. With storeJobs on (its default), every Job that save() or
 * saveAll() created stays in the producer's `jobs` map until a succeeded / failed event for it comes
 * back, and with getEvents off none ever does: the bench process kept every job it had added
 * (~530 B each), which ran a 4 GB heap out of memory filling W7's 10⁷ backlog. The map only
 * dispatches job events to Job objects; it sends nothing to Redis, so the jobs written are the same.
 * Stalled jobs are only looked for when checkStalledJobs() is called, which its defaults never do.
 */
import BeeQueue from 'bee-queue';
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

/** A bee-queue queue for one run. */
export function createBeeQueue({ url, queue: name }: AdapterOptions): Adapter {
  const redis = hostPort(url);
  const producer = new BeeQueue<BenchPayload>(name, {
    redis,
    isWorker: false,
    getEvents: false,
    storeJobs: false,
    removeOnSuccess: true,
  });
  const create = (job: NewJob) => {
    const created = producer.createJob(job.payload);
    // bee-queue takes an absolute time; Date.now() + delay is the same intended due time the others get.
    if (job.delayMs > 0) created.delayUntil(Date.now() + job.delayMs);
    return created;
  };
  return {
    system: 'bee-queue',
    async add(job) {
      await create(job).save();
    },
    async addBulk(jobs) {
      const errors = await producer.saveAll(jobs.map(create));
      if (errors.size > 0) {
        const [first] = errors.values();
        throw new Error(`bee-queue saveAll: ${errors.size} jobs failed: ${String(first)}`);
      }
    },
    async startWorker(spec: WorkerSpec): Promise<RunningWorker> {
      const short = spec.settings === 'short';
      const worker = new BeeQueue<BenchPayload>(name, {
        redis,
        getEvents: false,
        activateDelayedJobs: true,
        removeOnSuccess: true,
        ...(short && { stallInterval: SHORT_LEASE_MS }),
      });
      worker.on('succeeded', () => spec.onCompleted());
      worker.on('error', (err) => console.error(`bee-queue worker: ${err.message}`));
      await worker.ready();
      if (short) await worker.checkStalledJobs(SHORT_LEASE_MS);
      worker.process(spec.concurrency, (job) => spec.handler({ payload: job.data, serverLatenessMs: null }));
      return { close: () => worker.close(1_000) };
    },
    close: () => producer.close(),
  };
}
