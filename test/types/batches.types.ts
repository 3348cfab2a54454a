/**
 * Type tests of batch workers: checked by `npm run typecheck` (tsc), never run. With `batch`, the
 * handler takes `BatchJob<T>[]`; without it, one Job<T>; the two cannot be mixed up.
 */
import { expectTypeOf } from 'vitest';
import { Worker, type BatchJob, type Job, type WorkerOptions } from '../../src/index.js';

interface Row {
  n: number;
}

// With batch: the handler's argument is an array of jobs that can be failed alone.
export const batch = () =>
  new Worker<Row>(
    'rows',
    async (jobs) => {
      expectTypeOf(jobs).toEqualTypeOf<Array<BatchJob<Row>>>();
      expectTypeOf(jobs[0]!.payload.n).toEqualTypeOf<number>();
      expectTypeOf<Parameters<BatchJob<Row>['fail']>>().toEqualTypeOf<[error: unknown]>();
      await jobs[0]!.fail(new Error('bad row'));
    },
    { batch: { size: 100, waitMs: 20 }, concurrency: 2, autorun: false },
  );

// A BatchJob is a Job: code written for Job<T> takes it.
expectTypeOf<BatchJob<Row>>().toExtend<Job<Row>>();

// Without batch: one job per call, as before; options typed as WorkerOptions still fit.
export const single = (options: WorkerOptions<Row>) =>
  new Worker<Row>(
    'rows',
    async (job) => {
      expectTypeOf(job).toEqualTypeOf<Job<Row>>();
    },
    options,
  );

// A one-job handler cannot be given batch, nor a batch handler left without it.
export const wrong = () => [
  // @ts-expect-error batch needs a handler taking jobs: BatchJob<T>[]
  new Worker<Row>('rows', async (job: Job<Row>) => job.payload.n, { batch: { size: 10 } }),
  // @ts-expect-error a batch worker claims no jobs ahead of its batches: no prefetch
  new Worker<Row>('rows', async (jobs) => jobs.length, { batch: { size: 10 }, prefetch: 5 }),
  // @ts-expect-error a handler taking an array needs the batch option
  new Worker<Row>('rows', async (jobs: Array<BatchJob<Row>>) => jobs.length, { concurrency: 1 }),
];
