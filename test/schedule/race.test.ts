/**
 * Exactly once per occurrence with many schedulers: three Scheduler instances, each on its own
 * connection as in three processes, race on one short `every` schedule; the jobs actually run are
 * counted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { Scheduler } from '../../src/scheduler.js';
import { tickContextOf } from '../../src/schedule/tick.js';
import { readSchedules } from '../../src/operations/schedule-read.js';
import { advanceSchedule } from '../../src/schedule/tick.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { internals } from '../support/internals.js';

const redis = useRedis();
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const PERIOD = 200;

/** Three queues (connections) and a scheduler on each. */
async function threeSchedulers(
  name: string,
): Promise<{ queues: Array<Queue<{ n: number }>>; schedulers: Scheduler[]; addedBySchedulers: string[] }> {
  const addedBySchedulers: string[] = [];
  const queues = [0, 1, 2].map(() => new Queue<{ n: number }>(name, { connection: redis.url() }));
  const schedulers = queues.map((queue) => new Scheduler(queue));
  const errors: Error[] = [];
  for (const scheduler of schedulers) {
    scheduler.on('error', (err) => errors.push(err));
    scheduler.on('added', (occurrence) => addedBySchedulers.push(occurrence.id));
  }
  cleanups.push(async () => {
    await Promise.all(schedulers.map((s) => s.stop()));
    await Promise.all(queues.map((q) => q.close()));
    expect(errors).toEqual([]);
  });
  // Connected before anything races, so no instance starts late for want of a connection.
  await Promise.all(queues.map((q) => internals(q).client.ping()));
  return { queues, schedulers, addedBySchedulers };
}

/** Due times of the scheduled jobs of `name` whose ids belong to schedule `schedule`. */
async function waitingOccurrences(queue: Queue<{ n: number }>, schedule: string): Promise<number[]> {
  const waiting = await queue.list('scheduled', { limit: 1_000 });
  return waiting.filter((job) => job.id.startsWith(`${schedule}@`)).map((job) => job.runAt.getTime());
}

describe('three schedulers racing on one schedule', () => {
  it('run each occurrence of a 200 ms `every` schedule exactly once, over 20+ occurrences', async () => {
    const name = uniqueQueue('race');
    const { queues, schedulers, addedBySchedulers } = await threeSchedulers(name);
    const runs: Array<{ id: string; runAt: number }> = [];
    const worker = new Worker<{ n: number }>(
      name,
      async (job) => {
        runs.push({ id: job.id, runAt: job.runAt.getTime() });
      },
      { connection: redis.url(), concurrency: 4 },
    );
    cleanups.push(() => worker.close());
    await worker.waitUntilReady();
    await Promise.all(schedulers.map((s) => s.start()));

    const declared = await queues[0]!.schedule('beat', { every: PERIOD }, { n: 1 });
    await waitFor(() => runs.length >= 22, { timeoutMs: 15_000, what: '22 occurrences run' });
    await Promise.all(schedulers.map((s) => s.stop()));
    await worker.close();

    // Every occurrence added: those run, and the one added ahead that was still waiting.
    const waiting = await waitingOccurrences(queues[0]!, 'beat');
    const ran = runs.map((r) => r.runAt);
    const all = [...ran, ...waiting].sort((a, b) => a - b);
    const first = declared.next.getTime();
    expect(all).toEqual(all.map((_, i) => first + i * PERIOD)); // no gap, no duplicate
    expect(new Set(runs.map((r) => r.id)).size).toBe(runs.length);
    for (const r of runs) expect(r.id).toBe(`beat@${r.runAt}`);
    expect(waiting.length).toBeLessThanOrEqual(1);
    // schedule() adds the first occurrence(s) unless a scheduler woken by the declaration gets
    // there first; the schedulers add all the rest, each once between them.
    const ids = all.map((t) => `beat@${t}`);
    const bySchedulers = [...addedBySchedulers].sort((a, b) => ids.indexOf(a) - ids.indexOf(b));
    expect(new Set(bySchedulers).size).toBe(bySchedulers.length);
    expect(bySchedulers).toEqual(ids.slice(ids.length - bySchedulers.length));
    expect(bySchedulers.length).toBeGreaterThanOrEqual(20);
    expect(schedulers.reduce((sum, s) => sum + s.stats.added, 0)).toBe(addedBySchedulers.length);
    console.log(
      `race: ${runs.length} run, ${waiting.length} waiting; added per scheduler ${schedulers.map((s) => s.stats.added).join('/')}, lost races ${schedulers.map((s) => s.stats.lost).join('/')}`,
    );
  });

  it('three schedulers that read the same due state: one adds the occurrence, two are refused', async () => {
    const name = uniqueQueue('lockstep');
    const { queues } = await threeSchedulers(name);
    await queues[0]!.schedule('beat', { every: PERIOD }, { n: 1 });
    const r = inspector(redis.url());
    cleanups.push(async () => void (await r.quit()));
    // Each scheduler's round is a read then a tick; run the three reads, then the three ticks, so
    // every round is a true race on the same state (in free running the first one's tick often
    // lands before the others read, and they merely find nothing due).
    const contexts = queues.map((q) => tickContextOf(q));
    const lastKey = internals(queues[0]!).keys.scheduleLast;
    const rounds = 20;
    for (let round = 0; round < rounds; round++) {
      const last = Number(await r.zscore(lastKey, 'beat'));
      await waitFor(async () => (await serverNow(r)) >= last, {
        timeoutMs: 2_000,
        what: 'the occurrence to fall due',
      });
      const reads = await Promise.all(
        queues.map((q) => readSchedules(internals(q).client, internals(q).keys, { mode: 'due', limit: 10 })),
      );
      for (const read of reads) expect(read.entries.map((e) => [e.name, e.last])).toEqual([['beat', last]]);
      const outs = await Promise.all(
        reads.map((read, i) => advanceSchedule(contexts[i]!, read.entries[0]!, read.now)),
      );
      expect(outs.map((o) => o.outcome).sort()).toEqual(['done', 'stale', 'stale']);
      const winner = outs.find((o) => o.outcome === 'done')!;
      const mark = Number(await r.zscore(lastKey, 'beat'));
      expect(winner.last).toBe(mark);
      for (const out of outs)
        if (out.outcome === 'stale') expect(out).toEqual({ outcome: 'stale', last: mark, added: [] });
      // Usually one occurrence; more when the round started so late that some fell within the grace.
      expect(winner.added.map((a) => a.runAt)).toEqual(
        Array.from({ length: (mark - last) / PERIOD }, (_, i) => last + (i + 1) * PERIOD),
      );
    }
    // Nobody runs the jobs here: every occurrence added waits, each once, with no gap.
    const waiting = (await waitingOccurrences(queues[0]!, 'beat')).sort((a, b) => a - b);
    expect(waiting.length).toBeGreaterThanOrEqual(rounds + 1);
    expect(waiting).toEqual(waiting.map((_, i) => waiting[0]! + i * PERIOD));
    expect(waiting.at(-1)).toBe(Number(await r.zscore(lastKey, 'beat')));
  });
});
