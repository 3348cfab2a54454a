/**
 * One precedence for a backoff given in more than one place (README, "Retries"): the add's own
 * backoff, else the queue's defaultJobOptions.backoff (both stored with the job), else the
 * worker's backoff. Where a job's stored backoff overrides one the worker was given, the worker
 * logs a warning naming both, once per distinct backoff.
 */
import { afterEach, expect, it } from 'vitest';
import { Queue, Worker, type Job, type QueueOptions, type WorkerOptions } from '../../src/index.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

/** How much later than the claim a retry may be due, beyond its backoff: the handler and fail round trip. */
const SLACK_MS = 1_500;

function setup(queueOptions: QueueOptions<string>, workerOptions: WorkerOptions<string>) {
  const name = uniqueQueue('precedence');
  const queue = new Queue<string>(name, { connection: redis.url(), ...queueOptions });
  const warnings: string[] = [];
  /** Per job id: how long after its claim the retry is due. */
  const retryAfter = new Map<string, number>();
  const worker = new Worker<string>(
    name,
    async () => {
      throw new Error('try again');
    },
    {
      connection: redis.url(),
      concurrency: 4,
      logger: { warn: (m) => warnings.push(m), error: () => {} },
      ...workerOptions,
    },
  );
  worker.on('failed', (job: Job<string>, _err, retryAt) =>
    retryAfter.set(job.id, retryAt.getTime() - job.claimedAt.getTime()),
  );
  closers.push(async () => {
    await worker.close({ timeoutMs: 1_000 });
    await queue.close();
  });
  const failedOnce = (ids: string[]) =>
    waitFor(() => ids.every((id) => retryAfter.has(id)), { what: `first failures of ${ids.join(', ')}` });
  return { queue, warnings, retryAfter, failedOnce };
}

it("the queue's default backoff wins over the worker's backoff function, with a warning naming both", async () => {
  const { queue, warnings, retryAfter, failedOnce } = setup(
    { defaultJobOptions: { backoff: { type: 'fixed', delay: 2_000 } } },
    { backoff: () => 100 },
  );
  await queue.add('a', { id: 'defaulted', attempts: 2 });
  await failedOnce(['defaulted']);
  expect(retryAfter.get('defaulted')).toBeGreaterThanOrEqual(2_000);
  expect(retryAfter.get('defaulted')).toBeLessThan(2_000 + SLACK_MS);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain('job defaulted carries its own backoff {"type":"fixed","delay":2000}');
  expect(warnings[0]).toContain("wins over this worker's backoff (a backoff function)");
});

it("the add's own backoff wins over the queue's default, and the worker's applies to jobs that carry none", async () => {
  const { queue, warnings, retryAfter, failedOnce } = setup({}, { backoff: { type: 'fixed', delay: 100 } });
  await queue.add('a', { id: 'own', attempts: 2, backoff: { type: 'fixed', delay: 600 } });
  await queue.add('b', { id: 'plain', attempts: 2 });
  await failedOnce(['own', 'plain']);
  expect(retryAfter.get('own')).toBeGreaterThanOrEqual(600);
  expect(retryAfter.get('own')).toBeLessThan(600 + SLACK_MS);
  expect(retryAfter.get('plain')).toBeGreaterThanOrEqual(100);
  expect(retryAfter.get('plain')).toBeLessThan(600);
  expect(warnings).toEqual([expect.stringContaining('job own carries its own backoff')]);
  expect(warnings[0]).toContain('{"type":"fixed","delay":100}');
});

it("an add's backoff beats the queue's default; a worker given no backoff warns about none; one warning per distinct backoff", async () => {
  const {
    queue: quiet,
    warnings: none,
    retryAfter,
    failedOnce,
  } = setup({ defaultJobOptions: { backoff: { type: 'fixed', delay: 2_000 } } }, {});
  await quiet.add('a', { id: 'mine', attempts: 2, backoff: { type: 'fixed', delay: 300 } });
  await failedOnce(['mine']);
  expect(retryAfter.get('mine')).toBeGreaterThanOrEqual(300);
  expect(retryAfter.get('mine')).toBeLessThan(2_000);
  expect(none).toEqual([]);

  const {
    queue,
    warnings,
    failedOnce: failed,
  } = setup({ defaultJobOptions: { backoff: { type: 'fixed', delay: 2_000 } } }, { backoff: () => 100 });
  await queue.add('a', { id: 'one', attempts: 2 });
  await queue.add('b', { id: 'two', attempts: 2 });
  await queue.add('c', { id: 'three', attempts: 2, backoff: { type: 'fixed', delay: 700 } });
  await failed(['one', 'two', 'three']);
  expect(warnings).toHaveLength(2);
  expect(warnings.filter((w) => w.includes('"delay":2000'))).toHaveLength(1);
  expect(warnings.filter((w) => w.includes('"delay":700'))).toHaveLength(1);
});
