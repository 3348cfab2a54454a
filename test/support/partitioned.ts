/**
 * Checks the partition tests run on one server and on a cluster alike: every job runs once and
 * never early; an idle worker is woken by a job added to any partition.
 */
import { afterEach, expect } from 'vitest';
import { Queue, Worker, type BulkJob, type Job, type WorkerOptions } from '../../src/index.js';
import type { ConnectionOption } from '../../src/redis/connection.js';
import { partitionOf } from '../../src/partition/index.js';
import type { Cluster, Redis } from 'ioredis';
import { waitFor } from './fixtures.js';
import { connectionsBefore, waitForSleepingWorker } from './idle-worker.js';

/**
 * Makers of Queues and Workers of `partitions` partitions on `connection()`, each closed after the
 * test (with anything else passed to `closeAfter`), last made first.
 */
export function partitionedClients(
  connection: () => ConnectionOption,
  partitions: number,
): {
  queue: <T>(name: string, count?: number) => Queue<T>;
  worker: <T>(
    name: string,
    handler: (job: Job<T>) => Promise<unknown>,
    options?: WorkerOptions<T>,
  ) => Worker<T>;
  closeAfter: (close: () => Promise<unknown>) => void;
} {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  return {
    queue: <T>(name: string, count = partitions): Queue<T> => {
      const q = new Queue<T>(name, { connection: connection(), partitions: count });
      closers.push(() => q.close());
      return q;
    },
    worker: <T>(
      name: string,
      handler: (job: Job<T>) => Promise<unknown>,
      options: WorkerOptions<T> = {},
    ): Worker<T> => {
      const w = new Worker<T>(name, handler, { connection: connection(), partitions, ...options });
      w.on('error', () => {});
      closers.push(() => w.close({ timeoutMs: 2_000 }));
      return w;
    },
    closeAfter: (close) => void closers.push(close),
  };
}

/** Runs `jobs` through workers made by `startWorkers`; asserts each ran once, none early, and nothing is left. */
export async function expectEachRunsOnce<T>(
  queue: Queue<T>,
  startWorkers: (handler: (job: Job<T>) => Promise<void>) => Array<Worker<T>>,
  jobs: ReadonlyArray<BulkJob<T>>,
  timeoutMs: number,
): Promise<void> {
  const runs = new Map<string, number>();
  let early = 0;
  const workers = startWorkers(async (job) => {
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
    if (job.claimedAt.getTime() < job.runAt.getTime()) early++;
  });
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  const added = await queue.addBulk(jobs);
  await waitFor(() => runs.size === added.length, { timeoutMs, what: 'every job to run' });
  await waitFor(async () => (await queue.counts()).active === 0, { what: 'the last acks' });
  expect([...runs.values()].every((n) => n === 1)).toBe(true);
  expect(early).toBe(0);
  // Every job is kept as completed (the default retention), none cancelled.
  expect(await queue.counts()).toEqual({
    scheduled: 0,
    due: 0,
    held: 0,
    active: 0,
    dead: 0,
    completed: added.length,
    cancelled: 0,
    waitingChildren: 0,
  });
}

/** An id with `prefix` that hashes to `partition` of `partitions`. */
export function idIn(partition: number, partitions: number, prefix: string): string {
  for (let i = 0; ; i++) if (partitionOf(`${prefix}${i}`, partitions) === partition) return `${prefix}${i}`;
}

/**
 * With a worker made by `startWorker` asleep until a job an hour ahead (its own timer set to an
 * hour), add a job due in 200 ms to each partition: each must start within `maxLateMs` of its due
 * time, which only a wake-up explains. "Asleep" is read from Redis through `inspect()` (a client the
 * helper closes), not guessed.
 */
export async function expectWakeFromEveryPartition(
  queue: Queue<number>,
  startWorker: (
    handler: (job: Job<number>) => Promise<void>,
    options: { maxSleepMs: number },
  ) => Worker<number>,
  partitions: number,
  maxLateMs: number,
  inspect: () => Redis | Cluster,
): Promise<void> {
  const late: number[] = [];
  // The far job first: the worker's first claim then sees it and sleeps until it.
  await queue.add(-1, { delay: '1h' });
  const look = inspect();
  try {
    const before = await connectionsBefore(look);
    const worker = startWorker(async (job) => void late.push(job.claimedAt.getTime() - job.runAt.getTime()), {
      maxSleepMs: 3_600_000,
    });
    await worker.waitUntilReady();
    await waitForSleepingWorker(look, before);
  } finally {
    await look.quit();
  }
  for (let p = 0; p < partitions; p++)
    await queue.add(p, { id: idIn(p, partitions, `wake-${p}-`), delay: 200 });
  await waitFor(() => late.length === partitions, { timeoutMs: 5_000, what: 'the woken runs' });
  for (const ms of late) expect(ms).toBeLessThan(maxLateMs);
}
