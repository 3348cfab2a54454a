/**
 * Real worker processes against a real redis-server: contention between processes, a worker
 * killed (SIGKILL) or frozen (SIGSTOP) mid-job, and workers whose clock is skewed (a preload shifting Date).
 * DESIGN section 2, invariants 1 (one holder), 2 (nothing lost), 3 (never early), 4 (fencing) and
 * 7 (one clock).
 */
import { afterEach, describe, expect, test } from 'vitest';
import { Queue, Worker, type Job } from '../../src/index.js';
import { decodeRecord } from '../../src/record/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { phase, useWorkerProcesses, type LedgerEntry, type WorkerProcess } from '../support/processes.js';
import { shiftedClockEnv } from '../support/shifted-clock.js';

const redis = useRedis();
const procs = useWorkerProcesses();

/** A worker process that claims and reaps every 25 ms: it takes any job the moment a lease allows. */
function spawnEagerRival(queue: string): Promise<WorkerProcess> {
  return procs.spawn({
    url: redis.url(),
    queue,
    leaseMs: 1_000,
    sleepMs: 0,
    maxSleepMs: 25,
    reapIntervalMs: 25,
  });
}

/** Closers of what a test opened (queues, in-process workers, clients), run after it even on failure. */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close().catch(() => undefined);
});

function openQueue(name: string): Queue<{ n: number }> {
  const queue = new Queue<{ n: number }>(name, { connection: redis.url() });
  cleanups.push(() => queue.close());
  return queue;
}

/** One handler run seen by an in-process worker. */
interface Run {
  id: string;
  attempt: number;
  runAt: number;
  claimedAt: number;
  worker: string;
}

/** An in-process Worker that records every run, completion and error. */
function inProcessWorker(
  name: string,
  tag: string,
  opts: {
    concurrency?: number;
    leaseMs?: number;
    sleepMs?: number;
    maxSleepMs?: number;
    reapIntervalMs?: number;
  },
): {
  worker: Worker<{ n: number }>;
  runs: Run[];
  completed: Array<{ id: string; attempt: number }>;
  errors: Error[];
} {
  const runs: Run[] = [];
  const completed: Array<{ id: string; attempt: number }> = [];
  const errors: Error[] = [];
  const worker = new Worker<{ n: number }>(
    name,
    async (job: Job<{ n: number }>) => {
      runs.push({
        id: job.id,
        attempt: job.attempt,
        runAt: +job.runAt,
        claimedAt: +job.claimedAt,
        worker: tag,
      });
      if (opts.sleepMs) await sleep(opts.sleepMs);
    },
    {
      connection: redis.url(),
      concurrency: opts.concurrency ?? 1,
      leaseMs: opts.leaseMs ?? 15_000,
      ...(opts.maxSleepMs !== undefined && { maxSleepMs: opts.maxSleepMs }),
      ...(opts.reapIntervalMs !== undefined && { reapIntervalMs: opts.reapIntervalMs }),
    },
  );
  worker.on('completed', (job) => completed.push({ id: job.id, attempt: job.attempt }));
  worker.on('error', (err) => errors.push(err));
  cleanups.push(() => worker.close({ timeoutMs: 2_000 }));
  return { worker, runs, completed, errors };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Nothing waits, runs or lies dead, and no error or progress is left behind: every record left in
 * the queue is the final record of a job listed in `completed` (01 80 08, no result kept) or
 * `cancelled` (01 80 10), each in its set (c, x).
 */
async function expectOnlyFinished(
  name: string,
  finished: { completed: readonly string[]; cancelled?: readonly string[] },
): Promise<void> {
  const client = inspector(redis.url());
  try {
    const k = queueKeys(name);
    const sizes = {
      waiting: await client.zcard(k.waiting),
      prioWaiting: await client.zcard(k.prioWaiting),
      prioReady: await client.zcard(k.prioReady),
      leases: await client.zcard(k.leases),
      dead: await client.zcard(k.dead),
      errors: await client.hlen(k.errors),
      progress: await client.hlen(k.progress),
    };
    expect(sizes).toEqual({
      waiting: 0,
      prioWaiting: 0,
      prioReady: 0,
      leases: 0,
      dead: 0,
      errors: 0,
      progress: 0,
    });
    const cancelled = finished.cancelled ?? [];
    expect((await client.zrange(k.completed, 0, -1)).sort()).toEqual([...finished.completed].sort());
    expect((await client.zrange(k.cancelled, 0, -1)).sort()).toEqual([...cancelled].sort());
    // Only final records are left: each completed or cancelled job's, with nothing of the job but
    // its claim block and max attempts (finalRecord).
    const records = await client.hgetallBuffer(k.records);
    const finals = Object.fromEntries(
      Object.entries(records).map(([id, record]) => {
        const { header, payload } = decodeRecord(record);
        return [id, { completed: header.completed, cancelled: header.cancelled, rest: payload.length }];
      }),
    );
    expect(finals).toEqual({
      ...Object.fromEntries(
        finished.completed.map((id) => [id, { completed: true, cancelled: false, rest: 0 }]),
      ),
      ...Object.fromEntries(cancelled.map((id) => [id, { completed: false, cancelled: true, rest: 0 }])),
    });
  } finally {
    await client.quit();
  }
}

/** queue.counts() of a queue where nothing waits, runs or lies dead. */
function finishedCounts(completed: number, cancelled = 0) {
  return { scheduled: 0, due: 0, held: 0, active: 0, dead: 0, completed, cancelled, waitingChildren: 0 };
}

/** The lease deadline (server ms) of an active job, and who holds it. */
async function activeLease(
  queue: Queue<{ n: number }>,
  id: string,
): Promise<{ deadline: number; workerId: string }> {
  const info = await queue.get(id);
  expect(info?.state, `job ${id} should be active`).toBe('active');
  expect(info?.lease).not.toBeNull();
  return { deadline: +info!.lease!.deadline, workerId: info!.lease!.workerId };
}

function ofJob<E extends LedgerEntry>(entries: readonly E[], id: string): E[] {
  return entries.filter((e) => e.id === id);
}

function describeLedger(proc: WorkerProcess): string {
  return `ledger of pid ${proc.pid}:\n${proc
    .ledger()
    .map((e) => JSON.stringify(e))
    .join('\n')}\noutput:\n${proc.output()}`;
}

describe('worker processes against one redis-server', () => {
  test('contention: 2 processes and 2 in-process workers run 2,000 jobs exactly once, none early, none lost', async () => {
    const N = 2_000;
    const name = uniqueQueue('contention');
    const queue = openQueue(name);
    const [p1, p2] = await Promise.all([
      procs.spawn({ url: redis.url(), queue: name, concurrency: 10, sleepMs: 2 }),
      procs.spawn({ url: redis.url(), queue: name, concurrency: 10, sleepMs: 2 }),
    ]);
    const local = [
      inProcessWorker(name, 'in-a', { concurrency: 10, sleepMs: 2 }),
      inProcessWorker(name, 'in-b', { concurrency: 10, sleepMs: 2 }),
    ];
    await Promise.all(local.map((w) => w.worker.waitUntilReady()));

    // 200 distinct due times over 2 s, 10 jobs on each, added out of order: every due instant is a race.
    const added = await queue.addBulk(
      Array.from({ length: N }, (_, i) => ({
        payload: { n: i },
        opts: { delay: 300 + 10 * ((i * 37) % 200) },
      })),
    );
    expect(added.filter((a) => a.created)).toHaveLength(N);
    const dueById = new Map(added.map((a) => [a.id, +a.runAt]));
    expect(dueById.size).toBe(N);

    const completedCount = (): number =>
      local.reduce((sum, w) => sum + w.completed.length, 0) +
      phase(p1.ledger(), 'completed').length +
      phase(p2.ledger(), 'completed').length;
    await waitFor(() => completedCount() >= N, {
      timeoutMs: 20_000,
      intervalMs: 100,
      what: `${N} completions`,
    });

    // Graceful shutdown of both processes (SIGTERM -> worker.close -> exit 0).
    expect(await p1.stop()).toBe(0);
    expect(await p2.stop()).toBe(0);
    await Promise.all(local.map((w) => w.worker.close()));

    const ledgers = [p1.ledger(), p2.ledger()];
    const starts: Run[] = [
      ...local.flatMap((w) => w.runs),
      ...ledgers.flatMap((entries, i) =>
        phase(entries, 'start').map((s) => ({ ...s, worker: `proc-${i + 1}` })),
      ),
    ];
    // Exactly once: 2,000 starts, 2,000 distinct ids, the ids that were added, all on attempt 1.
    const startsPerId = new Map<string, number>();
    for (const s of starts) startsPerId.set(s.id, (startsPerId.get(s.id) ?? 0) + 1);
    const twice = [...startsPerId].filter(([, n]) => n > 1);
    expect(twice, 'job ids started more than once').toEqual([]);
    expect(starts).toHaveLength(N);
    expect([...startsPerId.keys()].sort()).toEqual([...dueById.keys()].sort());
    expect(
      starts.filter((s) => s.attempt !== 1),
      'runs on a second attempt',
    ).toEqual([]);

    // Every worker took part, so the runs above really were contended.
    for (const tag of ['in-a', 'in-b', 'proc-1', 'proc-2']) {
      expect(starts.filter((s) => s.worker === tag).length, `jobs run by ${tag}`).toBeGreaterThan(0);
    }

    // Never early by the Redis clock; and runAt is the due time add() reported.
    expect(
      starts.filter((s) => s.claimedAt < s.runAt),
      'runs claimed before their due time',
    ).toEqual([]);
    expect(
      starts.filter((s) => s.runAt !== dueById.get(s.id)),
      'runs whose runAt is not the added due time',
    ).toEqual([]);

    // Every start completed (acked) once; nothing refused, failed or reported.
    const completions = [
      ...local.flatMap((w) => w.completed.map((c) => c.id)),
      ...ledgers.flatMap((entries) => phase(entries, 'completed').map((c) => c.id)),
    ];
    expect(completions).toHaveLength(N);
    expect(new Set(completions).size).toBe(N);
    expect(local.flatMap((w) => w.errors)).toEqual([]);
    expect(
      ledgers.flatMap((e) =>
        e.filter((x) => x.phase !== 'start' && x.phase !== 'end' && x.phase !== 'completed'),
      ),
    ).toEqual([]);

    // Nothing lost or left behind: each job kept as completed, nothing else.
    expect(await queue.counts()).toEqual(finishedCounts(N));
    await expectOnlyFinished(name, { completed: [...dueById.keys()] });
  });

  test('SIGKILL mid-job: the job runs again (attempt 2) only after the dead worker’s lease expired, and completes once', async () => {
    const name = uniqueQueue('sigkill');
    const queue = openQueue(name);
    const first = await procs.spawn({ url: redis.url(), queue: name, leaseMs: 1_000, sleepMs: 60_000 });
    const { id } = await queue.add({ n: 1 }, { delay: 50 });
    await waitFor(() => ofJob(phase(first.ledger(), 'start'), id).length > 0, { what: 'the first start' });

    // An eager rival: it claims and reaps every 25 ms, so it takes the job the moment its lease allows.
    const second = await spawnEagerRival(name);
    // While the first worker lives, its renewed lease keeps the job: longer than one lease, nothing moves.
    await sleep(1_200);
    const held = await activeLease(queue, id);
    expect(held.workerId).toBe(first.workerId);
    expect(ofJob(phase(second.ledger(), 'start'), id), 'the rival took a live, renewed lease').toEqual([]);

    first.signal('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    // The dead process can no longer renew: this is the deadline it left behind (>= the one seen before).
    const left = await activeLease(queue, id);
    expect(left.workerId).toBe(first.workerId);
    expect(left.deadline).toBeGreaterThanOrEqual(held.deadline);

    await waitFor(() => ofJob(phase(second.ledger(), 'completed'), id).length > 0, {
      timeoutMs: 10_000,
      what: `the second worker completing ${id}`,
    });

    const firstLedger = first.ledger();
    const secondLedger = second.ledger();
    expect(ofJob(phase(firstLedger, 'start'), id).map((s) => s.attempt)).toEqual([1]);
    expect(ofJob(phase(firstLedger, 'end'), id), 'the killed handler never returned').toEqual([]);
    const [retry, ...more] = ofJob(phase(secondLedger, 'start'), id);
    expect(more, describeLedger(second)).toEqual([]);
    expect(retry?.attempt).toBe(2);
    // Not before the lease the dead worker held had expired (server clock) ...
    expect(retry!.claimedAt).toBeGreaterThanOrEqual(left.deadline);
    // ... and soon after it (the rival looks every 25 ms; generous for a loaded CI machine).
    expect(retry!.claimedAt - left.deadline).toBeLessThan(500);
    expect(ofJob(phase(secondLedger, 'completed'), id).map((c) => c.attempt)).toEqual([2]);
    expect(
      secondLedger.filter((e) => e.phase === 'error' || e.phase === 'failed' || e.phase === 'dead'),
    ).toEqual([]);

    expect((await queue.get(id))?.state).toBe('completed');
    expect(await queue.dead.list()).toEqual([]);
    expect(await queue.counts()).toEqual(finishedCounts(1));
    await expectOnlyFinished(name, { completed: [id] });
  });

  test('SIGKILL mid-job, then cancel: the reaper never runs the cancelled job again', async () => {
    const name = uniqueQueue('killcancel');
    const queue = openQueue(name);
    const first = await procs.spawn({ url: redis.url(), queue: name, leaseMs: 1_000, sleepMs: 60_000 });
    const { id } = await queue.add({ n: 1 }, { delay: 50 });
    await waitFor(() => ofJob(phase(first.ledger(), 'start'), id).length > 0, { what: 'the first start' });
    first.signal('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const left = await activeLease(queue, id);
    expect(await queue.cancel(id)).toBe(true);
    expect((await queue.get(id))?.state).toBe('cancelled');

    // An eager rival: it claims (reaping first) and reaps every 25 ms.
    const second = await spawnEagerRival(name);
    const r = inspector(redis.url());
    cleanups.push(() => r.quit());
    await waitFor(
      async () => {
        const [sec, micro] = await r.time();
        return Number(sec) * 1000 + Math.floor(Number(micro) / 1000) > left.deadline;
      },
      { what: "the dead worker's lease deadline to pass" },
    );
    // A job added after the deadline: once the rival ran it, its claims (each reaping first) and
    // its reaper have looked past the deadline.
    const { id: after } = await queue.add({ n: 2 });
    await waitFor(() => ofJob(phase(second.ledger(), 'completed'), after).length > 0, {
      timeoutMs: 10_000,
      what: 'the rival completing a later job',
    });
    expect(ofJob(phase(second.ledger(), 'start'), id), describeLedger(second)).toEqual([]);
    expect((await queue.get(id))?.state).toBe('cancelled');
    expect(await queue.counts()).toEqual(finishedCounts(1, 1));
    await expectOnlyFinished(name, { completed: [after], cancelled: [id] });
  });

  test('SIGSTOP past the lease: another worker completes the job, the frozen worker’s late ack is refused', async () => {
    const name = uniqueQueue('sigstop');
    const queue = openQueue(name);
    // The handler would finish well within the lease; 600 ms leaves room to stop it mid-run on a slow machine.
    const frozen = await procs.spawn({ url: redis.url(), queue: name, leaseMs: 1_000, sleepMs: 600 });
    const { id } = await queue.add({ n: 1 }, { delay: 50 });

    await waitFor(() => ofJob(phase(frozen.ledger(), 'start'), id).length > 0, {
      intervalMs: 5,
      what: 'the first start',
    });
    frozen.signal('SIGSTOP');
    expect(ofJob(phase(frozen.ledger(), 'end'), id), 'stopped before the handler returned').toEqual([]);
    // A renewal already on the wire when the process stopped may still land; let it, then read.
    await sleep(100);
    const held = await activeLease(queue, id);
    expect(held.workerId).toBe(frozen.workerId);

    // The lease keeper is a timer in the frozen process: nothing renews the lease now. The rescuer
    // claims and reaps every 25 ms, so it takes the job the moment the lease allows it.
    const rescuer = inProcessWorker(name, 'rescuer', { leaseMs: 1_000, maxSleepMs: 25, reapIntervalMs: 25 });
    await waitFor(() => rescuer.completed.some((c) => c.id === id), {
      timeoutMs: 10_000,
      what: `the rescuer completing ${id}`,
    });
    expect(rescuer.runs.map((r) => r.attempt)).toEqual([2]);
    expect(rescuer.runs[0]!.claimedAt).toBeGreaterThanOrEqual(held.deadline);
    expect(rescuer.errors).toEqual([]);
    expect((await queue.get(id))?.state, 'completed by the rescuer').toBe('completed');

    frozen.signal('SIGCONT');
    const refused = await waitFor(
      () =>
        ofJob(phase(frozen.ledger(), 'error'), id).find(
          (e) => e.code === 'DELAYQ_LEASE_LOST' && e.message.includes('result refused'),
        ),
      { timeoutMs: 10_000, what: `the late ack of ${id} being refused` },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${describeLedger(frozen)}`);
    });
    expect(refused.pid).toBe(frozen.pid);

    const ledger = frozen.ledger();
    expect(ofJob(phase(ledger, 'start'), id).map((s) => s.attempt)).toEqual([1]);
    expect(
      ofJob(phase(ledger, 'end'), id).map((s) => s.attempt),
      'the handler ran on after SIGCONT',
    ).toEqual([1]);
    expect(phase(ledger, 'completed'), 'the late ack must not count as a completion').toEqual([]);
    expect(ledger.filter((e) => e.phase === 'failed' || e.phase === 'dead')).toEqual([]);
    expect(rescuer.runs).toHaveLength(1);

    // Completed exactly once in Redis terms: completed, not dead, not rescheduled by the refused ack.
    expect((await queue.get(id))?.state).toBe('completed');
    expect(await queue.dead.list()).toEqual([]);
    expect(await queue.counts()).toEqual(finishedCounts(1));
    await expectOnlyFinished(name, { completed: [id] });
  });

  // The worker's wall clock is 5 minutes off; the producer's and the server's are right. The
  // preload shifts Date in the worker process only (its timers run on), which is what the
  // invariant is about: only Redis's TIME decides when a job is due and when a lease expires.
  test.each([
    { skew: '+5m', offsetMs: 300_000 },
    { skew: '-5m', offsetMs: -300_000 },
  ])(
    'clock skew $skew: jobs start on time by the Redis clock and no lease expires early',
    async ({ skew, offsetMs }) => {
      const N = 20;
      const name = uniqueQueue('skew');
      const queue = openQueue(name);
      // The handler outlives the lease, so the lease keeper must renew (three times or so) under the
      // skewed clocks; concurrency N leaves a free slot for every job, so none waits for capacity.
      const skewed = await procs.spawn({
        url: redis.url(),
        queue: name,
        concurrency: N,
        leaseMs: 1_500,
        sleepMs: 2_000,
        env: shiftedClockEnv({ offsetMs }),
      });
      const added = await queue.addBulk(
        Array.from({ length: N }, (_, i) => ({ payload: { n: i }, opts: { delay: 300 + i * 25 } })),
      );
      const dueById = new Map(added.map((a) => [a.id, +a.runAt]));

      await waitFor(() => phase(skewed.ledger(), 'completed').length >= N, {
        timeoutMs: 15_000,
        what: `${N} completions with the worker's clock ${skew}`,
      }).catch((err: Error) => {
        throw new Error(`${err.message}\n${describeLedger(skewed)}`);
      });
      expect(await skewed.stop()).toBe(0);

      const ledger = skewed.ledger();
      const starts = phase(ledger, 'start');
      expect(starts).toHaveLength(N);
      expect(new Set(starts.map((s) => s.id))).toEqual(new Set(dueById.keys()));
      // The skew is real: the worker's wall clock reads 5 minutes off the server's.
      for (const s of starts) expect(Math.abs(s.start - s.claimedAt - offsetMs)).toBeLessThan(5_000);
      for (const s of starts) {
        expect(s.runAt).toBe(dueById.get(s.id));
        expect(s.claimedAt, `job ${s.id} started early`).toBeGreaterThanOrEqual(s.runAt);
        expect(s.claimedAt - s.runAt, `job ${s.id} started late`).toBeLessThanOrEqual(500);
      }
      // No lease expired early: every job ran once, on attempt 1, and its ack was accepted.
      expect(starts.filter((s) => s.attempt !== 1)).toEqual([]);
      expect(phase(ledger, 'completed').map((c) => c.attempt)).toEqual(Array<number>(N).fill(1));
      expect(phase(ledger, 'end').map((e) => e.attempt)).toEqual(Array<number>(N).fill(1));
      // Nothing else: no error, in particular no lease reported lost for a job that completed.
      expect(
        ledger.filter((e) => e.phase !== 'start' && e.phase !== 'end' && e.phase !== 'completed'),
        describeLedger(skewed),
      ).toEqual([]);

      expect(await queue.counts()).toEqual(finishedCounts(N));
      await expectOnlyFinished(name, { completed: [...dueById.keys()] });
    },
  );
});
