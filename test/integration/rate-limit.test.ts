/**
 * The rate limit holds all worker processes of a queue together: counted from the event stream's
 * 'claimed' entries (written by the claim script, by the Redis clock, with `events` 'all'), not
 * from the workers' word.
 */
import { afterEach, expect, it } from 'vitest';
import { Queue, type JobEvent } from '../../src/index.js';
import { parseEvent } from '../../src/events.js';
import { useWorkerProcesses } from '../support/processes.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { internals } from '../support/internals.js';

const redis = useRedis();
const procs = useWorkerProcesses();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

it('two worker processes together start at most max jobs per window, in due order', async () => {
  const name = uniqueQueue('rate');
  // Routine events such as 'claimed' are written only with events 'all' (failures only by default).
  const queue = new Queue<number>(name, {
    connection: redis.url(),
    events: { maxLen: 10_000, only: 'all' },
  });
  closers.push(() => queue.close());
  // Record the queue's config first, so the workers (no events option) take the recorded one.
  expect(await queue.counts()).toMatchObject({ scheduled: 0 });
  const limit = { max: 5, per: 300 };
  // Each process can hold 3 jobs, and holds them past a window (350 ms handlers), so neither can
  // take a whole window's 5 starts: both must take part, whichever wins the race for a window.
  const worker = { url: redis.url(), queue: name, concurrency: 3, sleepMs: 350, limit };
  await Promise.all([procs.spawn(worker), procs.spawn(worker)]);
  const jobs = 25;
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({
      payload: i,
      opts: { id: `r${i}`, runAt: Date.UTC(2020, 0, 1) + i },
    })),
  );

  // Read the stream as it stands (XRANGE) until every job has its 'claimed' entry.
  const claimed = async (): Promise<JobEvent[]> =>
    (await internals(queue).client.xrange(internals(queue).keys.events, '-', '+'))
      .map(parseEvent)
      .filter((e) => e.type === 'claimed');
  const claims = await waitFor(
    async () => {
      const found = await claimed();
      return found.length === jobs ? found : null;
    },
    { timeoutMs: 15_000, what: `${jobs} claimed events` },
  );
  expect(claims).toHaveLength(jobs);
  const times = claims.map((e) => e.at).sort((a, b) => a - b);
  // Sliding window: no max + 1 starts within any window of `per`.
  for (let i = limit.max; i < times.length; i++)
    expect(times[i]! - times[i - limit.max]!).toBeGreaterThanOrEqual(limit.per);
  // Both processes took part (each claim names its worker's holder number).
  expect(new Set(claims.map((e) => e.fields['holder'])).size).toBe(2);
  // Held-back jobs started window by window in due order: each window's jobs come after the last's.
  const order = [...claims].sort((a, b) => a.at - b.at).map((e) => Number(e.jobId.slice(1)));
  for (let i = limit.max; i < order.length; i++) {
    expect(order[i]!).toBeGreaterThan(Math.max(...order.slice(0, i - limit.max + 1)));
  }
});
