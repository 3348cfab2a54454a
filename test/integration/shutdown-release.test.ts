/**
 * A shutdown that hands a running job back says so: `worker.close()` releases a job whose handler
 * did not finish within the timeout (uncharged, due at once for another worker) and emits
 * `released` with the job id and the reason 'shutdown'.
 */
import { afterEach, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

it("close() hands a running job back and emits released (id, 'shutdown'); the job waits again, uncharged", async () => {
  const name = uniqueQueue('release-event');
  const queue = new Queue<string>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  let started = false;
  const worker = new Worker<string>(
    name,
    async (job) => {
      started = true;
      // Works until told to stop, as a long handler should.
      await new Promise((resolve) => job.signal.addEventListener('abort', resolve, { once: true }));
    },
    { connection: redis.url() },
  );
  const released: Array<[string, string]> = [];
  const completed: string[] = [];
  worker.on('released', (id, reason) => released.push([id, reason]));
  worker.on('completed', (job) => completed.push(job.id));
  const { id } = await queue.add('long', { attempts: 2 });
  await waitFor(() => started, { what: 'the handler to start' });
  await worker.close({ timeoutMs: 50 });

  expect(released).toEqual([[id, 'shutdown']]);
  expect(completed).toEqual([]);
  expect(await queue.get(id)).toMatchObject({ state: 'scheduled', attempts: 0, maxAttempts: 2 });
});

it('close() of a worker whose job finishes in time emits no released event', async () => {
  const name = uniqueQueue('release-none');
  const queue = new Queue<string>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  const worker = new Worker<string>(name, async () => 'done', { connection: redis.url() });
  const released: string[] = [];
  worker.on('released', (id) => released.push(id));
  const { id } = await queue.add('short');
  await waitFor(async () => (await queue.get(id))?.state === 'completed', { what: 'the job to complete' });
  await worker.close({ timeoutMs: 1_000 });
  expect(released).toEqual([]);
});
