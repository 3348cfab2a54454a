/**
 * Debounce and throttle with job ids: a burst of adds for one key becomes one job.
 *
 * - Debounce (`onExists: 'replace'`): every add replaces the waiting job's payload and pushes its
 *   due time to `delay` after this add. The job runs once, `delay` after the last add of the burst,
 *   with the last payload.
 * - Throttle (`onExists: 'keep'`, the default): the first add schedules the job `delay` ahead; the
 *   adds after it, while it waits, write nothing. It runs once per window, with the first payload.
 *
 * Starts a throwaway redis-server of its own (never 127.0.0.1:6379) and ends by itself; exits
 * non-zero when a burst did not become exactly one run.
 *
 *   npx tsx examples/debounce.ts
 *
 * In your project the imports are `from 'delayq'` and `from 'delayq/testing'`.
 */
import { Queue, Worker } from '../src/index.js';
import { startRedis } from '../src/testing/index.js';

interface Change {
  doc: number;
  rev: number;
}

const redis = await startRedis();
try {
  const queue = new Queue<Change>('search-index', { connection: redis.url });
  const runs: Array<{ id: string; payload: Change }> = [];
  const worker = new Worker<Change>(
    'search-index',
    async (job) => {
      console.log(`ran ${job.id} with rev ${job.payload.rev}`);
      runs.push({ id: job.id, payload: job.payload });
    },
    // A key's next burst may come within minutes of its last run: onExists 'replace' adds the id
    // again over its completed record, so the edit is delivered whatever is kept.
    { connection: redis.url },
  );
  await worker.waitUntilReady();

  // Debounce: reindex document 42 once, 300 ms after its last edit, with the last revision.
  for (let rev = 1; rev <= 5; rev++) {
    const r = await queue.add({ doc: 42, rev }, { id: 'reindex:42', delay: 300, onExists: 'replace' });
    console.log(
      `edit rev ${rev}: ${r.created ? 'scheduled' : r.replaced ? 'replaced' : `left (${r.state})`}`,
    );
  }

  // Throttle: notify about document 7 at most once per second, with the first change.
  for (let rev = 1; rev <= 5; rev++) {
    const r = await queue.add({ doc: 7, rev }, { id: 'notify:7', delay: '1s' });
    console.log(`change rev ${rev}: ${r.created ? 'scheduled' : 'absorbed'}`);
  }

  const deadline = Date.now() + 10_000;
  while (runs.length < 2) {
    if (Date.now() > deadline) throw new Error(`only ${runs.length} runs in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await worker.close();
  const counts = await queue.counts();
  await queue.close();
  const debounced = runs.filter((r) => r.id === 'reindex:42');
  const throttled = runs.filter((r) => r.id === 'notify:7');
  if (debounced.length !== 1 || debounced[0]!.payload.rev !== 5)
    throw new Error('debounce did not run once with rev 5');
  if (throttled.length !== 1 || throttled[0]!.payload.rev !== 1)
    throw new Error('throttle did not run once with rev 1');
  if (counts.scheduled + counts.active !== 0) throw new Error(`jobs left: ${JSON.stringify(counts)}`);
  console.log('each burst ran once: debounce with the last change, throttle with the first');
} finally {
  await redis.stop();
}
