/**
 * A live re-partition under load, on one server or a cluster alike (test/integration/ and
 * test/cluster/repartition.test.ts): a queue of `from` partitions with jobs dead, running (slow
 * handlers across the change) and waiting (chosen and generated ids, due over the next 3 s), a
 * producer adding all along, queue.repartition(to) in the middle; then a worker and producers
 * opened with the old count and with the new one, chosen ids added again from both, the dead
 * retried. Returns what happened; the tests assert it.
 */
import type { Cluster, Redis } from 'ioredis';
import { Queue, Worker, type Job } from '../../src/index.js';
import type { ConnectionOption } from '../../src/redis/connection.js';
import { configKey, partitionKeys } from '../../src/redis/keys.js';
import { waitFor } from './fixtures.js';

interface Kind {
  kind: 'plain' | 'slow' | 'die';
}

/** What a scenario run saw. */
export interface RepartitionOutcome {
  /** Jobs accepted as new (created) by any add, plus the slow and dead ones. */
  jobs: number;
  /** Accepted ids that never ran. */
  lost: string[];
  /** Ids that ran more often than they should (a dead job twice: before and after its retry). */
  twice: string[];
  /** Runs that started before their due time. */
  early: number;
  /** Accepted jobs whose first run's due time is not the one their add answered. */
  moved: number;
  /** Errors the workers emitted (a lease lost, a fate refused). */
  errors: Error[];
  /** Re-adds of chosen ids, from either count, that created a second job. */
  duplicated: number;
  /** The config record's partitions and partitions.base after the change. */
  recorded: Array<string | null>;
  /** Completed jobs per partition of the new count. */
  completedPer: number[];
  /** Jobs completed in total, over every partition. */
  completed: number;
  /** What counts() says is left (scheduled, due, active, dead). */
  left: number;
  /** Workers registered per partition at the end. */
  workersPer: number[];
  /** Lateness (claimedAt - runAt, ms) of the jobs due from 0.5 s before the change to 2 s after, sorted. */
  lateness: number[];
}

/** Run the scenario on queue `name`, `from` -> `to` partitions; `inspect` reads keys directly. */
export async function runRepartitionScenario(
  connection: () => ConnectionOption,
  inspect: Redis | Cluster,
  name: string,
  from: number,
  to: number,
): Promise<RepartitionOutcome> {
  const closers: Array<() => Promise<unknown>> = [];
  const queue = (partitions: number): Queue<Kind> => {
    const q = new Queue<Kind>(name, { connection: connection(), partitions });
    closers.push(() => q.close());
    return q;
  };
  const runs = new Map<string, number>();
  /** The due time each job's first run saw. */
  const ranFor = new Map<string, number>();
  let early = 0;
  let dieAllowed = false;
  const lateness: Array<{ at: number; late: number }> = [];
  const errors: Error[] = [];
  const handler = async (job: Job<Kind>): Promise<void> => {
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
    if (!ranFor.has(job.id)) ranFor.set(job.id, job.runAt.getTime());
    if (job.claimedAt.getTime() < job.runAt.getTime()) early++;
    lateness.push({ at: job.runAt.getTime(), late: job.claimedAt.getTime() - job.runAt.getTime() });
    if (job.payload.kind === 'slow') await new Promise((resolve) => setTimeout(resolve, 1_500));
    if (job.payload.kind === 'die' && !dieAllowed) throw new Error('dies before the change');
  };
  const worker = (partitions: number): Worker<Kind> => {
    const w = new Worker<Kind>(name, handler, {
      connection: connection(),
      partitions,
      concurrency: 20,
      leaseMs: 2_000,
      keepCompleted: { count: 100_000 },
    });
    w.on('error', (err) => errors.push(err));
    closers.push(() => w.close({ timeoutMs: 3_000 }));
    return w;
  };
  try {
    const qFrom = queue(from);
    await worker(from).waitUntilReady();
    // Dead before the change, and running across it.
    await qFrom.addBulk(
      Array.from({ length: 3 }, (_, i) => ({
        payload: { kind: 'die' as const },
        opts: { id: `die-${i}`, attempts: 1 },
      })),
    );
    await waitFor(async () => (await qFrom.counts()).dead === 3, { what: 'three dead jobs' });
    await qFrom.addBulk(Array.from({ length: 5 }, () => ({ payload: { kind: 'slow' as const } })));
    const accepted = new Set<string>();
    const dueAt = new Map<string, number>();
    const add = async (q: Queue<Kind>, ids: Array<string | undefined>, delay: (i: number) => number) => {
      const out = await q.addBulk(
        ids.map((id, i) => ({
          payload: { kind: 'plain' as const },
          opts: { ...(id && { id }), delay: delay(i) },
        })),
      );
      for (const r of out) {
        if (!r.created) continue;
        accepted.add(r.id);
        dueAt.set(r.id, r.runAt.getTime());
      }
    };
    // Waiting across the change: chosen ids and generated ones, due over the next 3 s.
    await add(
      qFrom,
      Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? `e-${i}` : undefined)),
      (i) => (i * 3_000) / 200,
    );
    await waitFor(async () => (await qFrom.counts()).active >= 5, { what: 'the slow jobs running' });

    // A producer adding while the count changes.
    let producing = true;
    let n = 0;
    const producer = (async () => {
      while (producing) {
        await add(
          qFrom,
          Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? `p-${n++}` : undefined)),
          (i) => i * 50,
        );
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const changedAt = Date.now();
    await queue(from).repartition(to);
    const recorded = await inspect.hmget(configKey(name), 'partitions', 'partitions.base');
    // Opened with the old count after the change: they adopt the recorded one.
    await worker(from).waitUntilReady();
    const qTo = queue(to);
    const qOld = queue(from);
    await add(
      qTo,
      Array.from({ length: 100 }, () => undefined),
      (i) => (i * 1_000) / 100,
    );
    await add(
      qOld,
      Array.from({ length: 20 }, (_, i) => `o-${i}`),
      () => 100,
    );
    // Chosen ids added again from either count: the existing job is found, not a second one.
    const again = [
      ...(await qTo.addBulk(
        Array.from({ length: 50 }, (_, i) => ({
          payload: { kind: 'plain' as const },
          opts: { id: `e-${2 * i}`, delay: 10 },
        })),
      )),
      ...(await qOld.addBulk(
        Array.from({ length: 20 }, (_, i) => ({
          payload: { kind: 'plain' as const },
          opts: { id: `o-${i}` },
        })),
      )),
    ];
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    producing = false;
    await producer;
    // The dead stay dead until retried where they are.
    const deadAfter = (await qTo.counts()).dead;
    dieAllowed = true;
    const retried = await qTo.dead.retryAll();
    if (deadAfter !== 3 || retried !== 3)
      throw new Error(`dead after the change ${deadAfter}, retried ${retried}`);

    await waitFor(() => [...accepted].every((id) => runs.has(id)), {
      timeoutMs: 30_000,
      what: 'every accepted job to run',
    });
    await waitFor(
      async () => {
        const c = await qTo.counts();
        return c.active === 0 && c.dead === 0;
      },
      { timeoutMs: 10_000, what: 'the last acks' },
    );
    // Past one lease: a fate sent to the wrong partition would show as a second run by now.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const counts = await qTo.counts();
    const keys = partitionKeys(name, to, from);
    const completedPer = await Promise.all(keys.map((k) => inspect.zcard(k.completed)));
    const status = await qTo.repartitionStatus();
    return {
      jobs: accepted.size + 8,
      lost: [...accepted].filter((id) => !runs.has(id)),
      twice: [...runs].filter(([id, k]) => k > (id.startsWith('die-') ? 2 : 1)).map(([id]) => id),
      early,
      moved: [...dueAt].filter(([id, at]) => ranFor.get(id) !== at).length,
      errors,
      duplicated: again.filter((r) => r.created).length,
      recorded,
      completedPer,
      completed: completedPer.reduce((a, b) => a + b, 0),
      left: counts.scheduled + counts.due + counts.active + counts.dead,
      workersPer: status.perPartition.map((p) => p.workers),
      lateness: lateness
        .filter((l) => l.at >= changedAt - 500 && l.at <= changedAt + 2_000)
        .map((l) => l.late)
        .sort((a, b) => a - b),
    };
  } finally {
    for (const close of closers.reverse()) await close();
  }
}

/** The figures line a scenario test prints (issue 34 asks for them). */
export function describeOutcome(where: string, from: number, to: number, o: RepartitionOutcome): string {
  const p50 = o.lateness[Math.floor(o.lateness.length / 2)] ?? 0;
  const max = o.lateness[o.lateness.length - 1] ?? 0;
  return `repartition ${from} -> ${to} under load (${where}): jobs ${o.jobs}, lost ${o.lost.length}, twice ${o.twice.length}, early ${o.early}, due time changed ${o.moved}; lateness of the ${o.lateness.length} jobs due from 0.5 s before the change to 2 s after: p50 ${p50} ms, max ${max} ms`;
}
