/**
 * Faults users meet (issue 8, item 2), each against its own redis-server:
 *
 * - SCRIPT FLUSH while jobs are added and run: no error reaches a caller or a worker.
 * - maxmemory with noeviction: add fails loudly (OOM), writes nothing of the failed call, and drops
 *   nothing it had accepted.
 * - A poison job that crashes its worker process every time is dead after exactly `attempts`
 *   tries, while other jobs keep flowing.
 * - SIGTERM of a worker with jobs in flight leaves no job leased to it.
 * - A handler that blocks the event loop past its lease loses it visibly; its late ack is refused.
 * - A worker whose wall clock jumps an hour forward, then back (a preload shifting Date), runs nothing early and
 *   loses no lease early.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { Queue, Worker, type Job } from '../../src/index.js';
import { isCompletedRecord } from './checker.js';
import { queueKeys } from '../../src/redis/keys.js';
import { setScriptTransport } from '../../src/redis/scripts.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import { shiftedClockEnv } from '../support/shifted-clock.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { CLAIM_AHEAD_MS } from '../../src/worker/start-gate.js';
import { readChaosLedger, type ChaosEntry, type ChaosPayload } from './ledger.js';
import { killAllChaosWorkers, spawnChaosWorker, type ChaosWorker } from './worker-handle.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Closers of what a test opened, run after it even on failure (last opened, first closed). */
const cleanups: Array<() => Promise<unknown>> = [];
let ledgerDir: string;

beforeAll(() => {
  ledgerDir = mkdtempSync(join(tmpdir(), 'delayq-faults-'));
});
afterEach(async () => {
  await killAllChaosWorkers();
  for (const close of cleanups.splice(0).reverse()) await close().catch(() => undefined);
});
afterAll(() => {
  rmSync(ledgerDir, { recursive: true, force: true });
});

async function server(args: string[] = []): Promise<RedisServer> {
  const s = await startRedis({ args });
  cleanups.push(() => s.stop());
  return s;
}

function openQueue(url: string, name: string): Queue<ChaosPayload> {
  const queue = new Queue<ChaosPayload>(name, { connection: url });
  cleanups.push(() => queue.close());
  return queue;
}

function client(url: string): Redis {
  const r = new Redis(url, { maxRetriesPerRequest: 1 });
  cleanups.push(() => r.quit());
  return r;
}

let spawned = 0;
function worker(
  url: string,
  queue: string,
  opts: {
    concurrency?: number;
    leaseMs?: number;
    closeTimeoutMs?: number;
    env?: Record<string, string>;
  } = {},
): Promise<ChaosWorker> {
  spawned++;
  return spawnChaosWorker(
    {
      url,
      queue,
      ledger: join(ledgerDir, `w${spawned}.jsonl`),
      concurrency: opts.concurrency ?? 1,
      leaseMs: opts.leaseMs ?? 1_000,
      closeTimeoutMs: opts.closeTimeoutMs ?? 5_000,
      connectionName: `faults-w${spawned}`,
      maxSleepMs: 50,
      reapIntervalMs: 50,
    },
    { env: opts.env ?? {} },
  );
}

function ledgerOf(w: ChaosWorker): ChaosEntry[] {
  return readChaosLedger(w.config.ledger);
}

function entries<P extends ChaosEntry['phase']>(
  list: readonly ChaosEntry[],
  phase: P,
  id?: string,
): Array<Extract<ChaosEntry, { phase: P }>> {
  return list.filter(
    (e): e is Extract<ChaosEntry, { phase: P }> =>
      e.phase === phase && (id === undefined || ('id' in e && e.id === id)),
  );
}

/** queue.counts() of a queue where nothing waits, runs or lies dead, and `completed` jobs are kept. */
function finishedCounts(completed: number) {
  return { scheduled: 0, due: 0, held: 0, active: 0, dead: 0, completed, cancelled: 0, waitingChildren: 0 };
}

/**
 * Every key of the queue that holds job data, with its size. Left out: the config record (the
 * queue's definition), the counters (n) and the holder registry (wk), bookkeeping whose size
 * depends on timing (per-second snapshots, workers still registered), not on the jobs.
 */
async function footprint(r: Redis, name: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [role, key] of Object.entries(queueKeys(name))) {
    if (role === 'config' || role === 'counters' || role === 'holders') continue;
    const type = await r.type(key);
    if (type === 'zset') out[role] = await r.zcard(key);
    else if (type === 'hash') out[role] = await r.hlen(key);
  }
  return out;
}

describe('faults users meet', () => {
  // FUNCTION FLUSH where scripts run as FCALL (Redis >= 7); SCRIPT FLUSH where they run by EVALSHA
  // (older servers: here forced), each answered by its own fallback.
  test.each([
    { flush: 'FUNCTION', transport: 'auto', fallback: /errorstat_ERR:count=(\d+)/ },
    { flush: 'SCRIPT', transport: 'eval', fallback: /errorstat_NOSCRIPT:count=(\d+)/ },
  ] as const)(
    '$flush FLUSH every 20 ms while 1,000 jobs are added and run: no error reaches anyone',
    async ({ flush, transport, fallback }) => {
      setScriptTransport(transport);
      cleanups.push(() => Promise.resolve(setScriptTransport('auto')));
      const s = await server();
      const name = uniqueQueue('flush');
      const queue = openQueue(s.url, name);
      const admin = client(s.url);
      const completed: string[] = [];
      const errors: Error[] = [];
      const workers = [0, 1].map(() => {
        const w = new Worker<ChaosPayload>(name, async () => {}, { connection: s.url, concurrency: 10 });
        w.on('completed', (job: Job<ChaosPayload>) => completed.push(job.id));
        w.on('error', (err) => errors.push(err));
        cleanups.push(() => w.close({ timeoutMs: 2_000 }));
        return w;
      });
      await Promise.all(workers.map((w) => w.waitUntilReady()));

      let flushing = true;
      let flushes = 0;
      const flusher = (async () => {
        while (flushing) {
          await admin.call(flush, 'FLUSH');
          flushes++;
          await sleep(20);
        }
      })();
      const N = 1_000;
      const addErrors: unknown[] = [];
      try {
        for (let b = 0; b < N / 50; b++) {
          await queue
            .addBulk(
              Array.from({ length: 50 }, (_, i) => ({ payload: { ms: 0 }, opts: { id: `f${b * 50 + i}` } })),
            )
            .catch((err: unknown) => addErrors.push(err));
          await sleep(10);
        }
        await waitFor(() => completed.length >= N, { timeoutMs: 30_000, what: `${N} completions` });
      } finally {
        flushing = false;
        await flusher;
      }

      expect(addErrors).toEqual([]);
      expect(errors).toEqual([]);
      expect(completed).toHaveLength(N);
      expect(new Set(completed).size).toBe(N);
      expect(await queue.counts()).toEqual(finishedCounts(N));
      // The fault was real: scripts (or the library) were flushed under the callers' feet and came
      // back by EVAL (or FUNCTION LOAD).
      expect(flushes).toBeGreaterThan(10);
      const stats = await admin.info('errorstats');
      expect(Number(fallback.exec(stats)?.[1] ?? 0)).toBeGreaterThan(0);
    },
    60_000,
  );

  test('maxmemory + noeviction: add fails loudly with OOM, writes nothing of that call, drops nothing accepted', async () => {
    const s = await server(['--maxmemory', '4mb', '--maxmemory-policy', 'noeviction']);
    const name = uniqueQueue('oom');
    const queue = openQueue(s.url, name);
    // A worker already running, its handlers held at a gate: it claims 5 jobs and waits. (A worker
    // started once Redis is full cannot start at all: see the report on layout.lua.) The lease is
    // long enough that no renewal is due while Redis is full (extend.lua is refused under OOM too).
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const completed: string[] = [];
    const errors: Error[] = [];
    const w = new Worker<ChaosPayload>(name, () => gate, {
      connection: s.url,
      concurrency: 5,
      // No claim-ahead: the worker holds exactly its 5 slots' jobs.
      prefetch: 0,
      leaseMs: 60_000,
    });
    w.on('completed', (job: Job<ChaosPayload>) => completed.push(job.id));
    w.on('error', (err) => errors.push(err));
    cleanups.push(() => w.close({ timeoutMs: 2_000 }));
    await w.waitUntilReady();

    const payload: ChaosPayload & { pad: string } = { ms: 0, pad: 'x'.repeat(2_000) };
    const accepted: string[] = [];
    let failure: unknown;
    let failedIds: string[] = [];
    for (let b = 0; b < 1_000 && failure === undefined; b++) {
      const ids = Array.from({ length: 50 }, (_, i) => `m${b * 50 + i}`);
      try {
        const out = await queue.addBulk(ids.map((id) => ({ payload, opts: { id } })));
        expect(out.every((o) => o.created)).toBe(true);
        accepted.push(...ids);
      } catch (err) {
        failure = err;
        failedIds = ids;
      }
    }
    expect(failure, 'add never failed: maxmemory was not reached').toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/^OOM command not allowed/);
    expect(accepted.length).toBeGreaterThan(100);
    // Nothing of the failed call was written; everything accepted is there (5 of it held by the worker).
    for (const id of failedIds) expect(await queue.get(id), id).toBeNull();
    await waitFor(async () => (await queue.counts()).active === 5, { what: 'the worker holding 5 jobs' });
    expect((await queue.counts()).scheduled).toBe(accepted.length - 5);

    // The running worker drains under OOM (claim and ack are allowed: their first write frees
    // memory), every accepted job exactly once.
    open();
    await waitFor(() => completed.length >= accepted.length, {
      timeoutMs: 30_000,
      what: `${accepted.length} completions`,
    });
    expect(errors).toEqual([]);
    expect([...completed].sort()).toEqual([...accepted].sort());
    expect(await queue.counts()).toEqual(finishedCounts(accepted.length));
    // With the memory back, adds work again.
    expect((await queue.add(payload, { id: 'after' })).created).toBe(true);
  }, 60_000);

  test('a poison job that crashes its process every time is dead after exactly `attempts` tries; other jobs keep flowing', async () => {
    const s = await server();
    const name = uniqueQueue('poison');
    const queue = openQueue(s.url, name);
    const options = { concurrency: 2, leaseMs: 1_000 };
    const all: ChaosWorker[] = [];
    let supervising = true;
    let crashes = 0;
    // A supervisor, as in production: a process that dies is replaced.
    const supervise = (w: ChaosWorker): void => {
      all.push(w);
      void w.exited.then(async ({ signal }) => {
        if (!supervising) return;
        if (signal === 'SIGKILL') crashes++;
        // A replacement still starting when the test ends is killed by afterEach: not an error.
        const next = await worker(s.url, name, options).catch(() => undefined);
        if (next) supervise(next);
      });
    };
    for (const w of await Promise.all([worker(s.url, name, options), worker(s.url, name, options)]))
      supervise(w);

    const { id: poison } = await queue.add({ ms: 0, crash: true }, { id: 'poison', attempts: 3 });
    // A normal job claimed in the same batch as the poison job dies with its process too, so it can
    // lose as many attempts as the poison job has crashes (3): it needs a fourth to be sure to finish.
    const normal = await queue.addBulk(
      Array.from({ length: 40 }, (_, i) => ({
        payload: { ms: 20 },
        opts: { id: `n${i}`, delay: 100 * i, attempts: 4 },
      })),
    );
    try {
      await waitFor(async () => (await queue.get(poison))?.state === 'dead', {
        timeoutMs: 60_000,
        intervalMs: 100,
        what: 'the poison job in the dead set',
      });
      await waitFor(async () => (await queue.counts()).scheduled + (await queue.counts()).active === 0, {
        timeoutMs: 30_000,
        what: 'the other jobs done',
      });
    } finally {
      supervising = false;
    }

    const ledger = all.flatMap(ledgerOf);
    const poisonStarts = entries(ledger, 'start', poison).sort((a, b) => a.start - b.start);
    expect(poisonStarts.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(crashes).toBe(3);
    const info = await queue.get(poison);
    expect(info?.attempts).toBe(3);
    expect(info?.lastError).toMatchObject({ name: 'LeaseExpired', message: 'lease expired', attempt: 3 });

    // Every other job completed (one applied ack each), and completions went on between the crashes.
    for (const { id } of normal) {
      // At most one applied ack each (a crash can take the record of one that was in flight).
      expect(entries(ledger, 'ack', id).filter((a) => a.outcome === 'ok').length, id).toBeLessThanOrEqual(1);
      expect((await queue.get(id))?.state, id).toBe('completed');
    }
    const between = entries(ledger, 'ack').filter(
      (a) => a.outcome === 'ok' && a.at > poisonStarts[0]!.start && a.at < poisonStarts[2]!.start,
    );
    expect(between.length, 'jobs completed while the poison job was retried').toBeGreaterThan(0);
    expect(await queue.counts()).toEqual({ ...finishedCounts(normal.length), dead: 1 });
  }, 120_000);

  test.each([
    {
      what: 'handlers outlast the close timeout: their jobs are released, attempts not charged',
      ms: 3_000,
      released: true,
    },
    { what: 'handlers finish within the close timeout: their jobs complete', ms: 300, released: false },
  ])(
    'SIGTERM with 4 jobs in flight leaves nothing leased: $what',
    async ({ ms, released }) => {
      const s = await server();
      const name = uniqueQueue('term');
      const queue = openQueue(s.url, name);
      const r = client(s.url);
      const w = await worker(s.url, name, { concurrency: 4, leaseMs: 5_000, closeTimeoutMs: 1_000 });
      const added = await queue.addBulk(
        Array.from({ length: 4 }, (_, i) => ({ payload: { ms }, opts: { id: `t${i}` } })),
      );
      await waitFor(() => entries(ledgerOf(w), 'start').length === 4, { what: '4 jobs running' });

      w.signal('SIGTERM');
      const { code } = await w.exited;
      expect(code).toBe(0);
      const keys = queueKeys(name);
      // No lease member is left, of this worker or any.
      expect(await r.zrange(keys.leases, 0, -1)).toEqual([]);
      const ledger = ledgerOf(w);
      if (released) {
        expect(entries(ledger, 'release').map((e) => e.outcome)).toEqual(Array(4).fill('released'));
        expect(entries(ledger, 'ack')).toEqual([]);
        for (const { id } of added) {
          const info = await queue.get(id);
          expect(info?.state, id).toBe('scheduled');
          expect(info?.attempts, `${id}: the released attempt is not charged`).toBe(0);
        }
        // Another worker takes them, each on attempt 1.
        const next = await worker(s.url, name, { concurrency: 4 });
        await waitFor(() => entries(ledgerOf(next), 'ack').length === 4, {
          timeoutMs: 15_000,
          what: '4 acks',
        });
        expect(entries(ledgerOf(next), 'start').map((e) => e.attempt)).toEqual([1, 1, 1, 1]);
      } else {
        expect(entries(ledger, 'ack').map((e) => e.outcome)).toEqual(Array(4).fill('ok'));
        expect(entries(ledger, 'release')).toEqual([]);
      }
      // Nothing but the 4 completed records, remembered against a resent add.
      expect(await footprint(r, name)).toEqual({ records: 4, completed: 4 });
      expect(
        Object.values(await r.hgetallBuffer(keys.records)).map((record) => isCompletedRecord(record)),
      ).toEqual(Array(4).fill(true));
    },
    60_000,
  );

  test('a handler that blocks the event loop past its lease loses it visibly; its late ack is refused', async () => {
    const s = await server();
    const name = uniqueQueue('block');
    const queue = openQueue(s.url, name);
    const blocker = await worker(s.url, name, { leaseMs: 1_000 });
    const { id } = await queue.add({ ms: 0, blockMs: 2_500 });
    await waitFor(() => entries(ledgerOf(blocker), 'start', id).length > 0, {
      intervalMs: 5,
      what: 'the blocker starting',
    });

    // The blocker cannot renew its lease now. An eager in-process worker takes the job once it may.
    const rescued: Array<{ attempt: number }> = [];
    const rescuer = new Worker<ChaosPayload>(
      name,
      async (job) => void rescued.push({ attempt: job.attempt }),
      {
        connection: s.url,
        leaseMs: 1_000,
        maxSleepMs: 25,
        reapIntervalMs: 25,
      },
    );
    cleanups.push(() => rescuer.close({ timeoutMs: 2_000 }));
    await waitFor(() => rescued.length > 0, { timeoutMs: 10_000, what: 'the rescuer running the job' });
    expect(rescued).toEqual([{ attempt: 2 }]);

    const refused = await waitFor(
      () => entries(ledgerOf(blocker), 'ack', id).find((a) => a.outcome.startsWith('refused')),
      { timeoutMs: 10_000, what: 'the blocker’s late ack refused' },
    );
    expect(refused.outcome).toMatch(/refused: (not held|expired)/);
    // The worker writes the ack's outcome when the reply arrives and its report a few steps later:
    // two appends another process can read between, on a loaded machine.
    const reported = await waitFor(
      () => {
        const errors = entries(ledgerOf(blocker), 'event').filter((e) => e.event === 'error' && e.id === id);
        return errors.length > 0 ? errors.map((e) => e.message).join('\n') : null;
      },
      { timeoutMs: 5_000, what: 'the blocker reporting the refused ack' },
    );
    expect(reported).toMatch(/lease on job .* was lost \(result refused/);
    expect(entries(ledgerOf(blocker), 'event').filter((e) => e.event === 'completed')).toEqual([]);
    await waitFor(async () => (await queue.get(id))?.state === 'completed', {
      what: 'the job completed by the rescuer',
    });
    expect(await queue.counts()).toEqual(finishedCounts(1));
  }, 60_000);

  // Only the wall clock jumps, as an NTP step does; the monotonic clock (timers) runs on.
  test('a worker whose wall clock jumps an hour forward, then back: nothing runs early, no lease expires early', async () => {
    const s = await server();
    const name = uniqueQueue('jump');
    const queue = openQueue(s.url, name);
    const clockFile = join(ledgerDir, 'clock-offset-ms');
    writeFileSync(clockFile, '0\n');
    const w = await worker(s.url, name, {
      concurrency: 30,
      leaseMs: 1_000,
      env: shiftedClockEnv({ file: clockFile }),
    });
    const N = 30;
    // Due over 0.5 to 3.4 s; each runs 1.5 s, longer than its lease, so renewals happen across the jumps.
    const added = await queue.addBulk(
      Array.from({ length: N }, (_, i) => ({
        payload: { ms: 1_500 },
        opts: { id: `c${i}`, delay: 500 + 100 * i },
      })),
    );
    const due = new Map(added.map((a) => [a.id, +a.runAt]));
    await sleep(1_000);
    writeFileSync(clockFile, '3600000\n');
    await sleep(1_500);
    writeFileSync(clockFile, '-3600000\n');
    await waitFor(() => entries(ledgerOf(w), 'ack').length >= N, { timeoutMs: 20_000, what: `${N} acks` });

    const ledger = ledgerOf(w);
    const claims = entries(ledger, 'claim').flatMap((c) =>
      c.jobs.map((j) => ({ ...j, now: c.now, at: c.at })),
    );
    expect(claims.map((c) => c.id).sort()).toEqual([...due.keys()].sort());
    for (const c of claims) {
      expect(c.attempt, `${c.id} ran twice`).toBe(1);
      expect(c.runAt).toBe(due.get(c.id));
      // A claim ahead leases a job at most CLAIM_AHEAD_MS before it is due, and holds it until then.
      expect(c.now, `${c.id} claimed early`).toBeGreaterThanOrEqual(c.runAt - CLAIM_AHEAD_MS);
      expect(c.now - c.runAt, `${c.id} claimed late`).toBeLessThan(1_000);
    }
    // Started at the due time or after, by the worker's bound of the Redis clock (its own wall
    // clock is an hour off, so it is no witness here).
    const starts = entries(ledger, 'start');
    expect(starts.map((s) => s.id).sort()).toEqual([...due.keys()].sort());
    for (const s of starts)
      expect(s.startNow, `${s.id} started early`).toBeGreaterThanOrEqual(due.get(s.id)!);
    expect(entries(ledger, 'ack').map((a) => a.outcome)).toEqual(Array(N).fill('ok'));
    expect(entries(ledger, 'event').filter((e) => e.event !== 'completed')).toEqual([]);
    // The jumps were real: the worker's wall clock read an hour ahead, then an hour behind, Redis.
    const offsets = claims.map((c) => c.at - c.now);
    expect(
      offsets.some((o) => Math.abs(o - 3_600_000) < 60_000),
      'a claim under +1 h',
    ).toBe(true);
    expect(
      offsets.some((o) => Math.abs(o + 3_600_000) < 60_000),
      'a claim under -1 h',
    ).toBe(true);
    expect(await queue.counts()).toEqual(finishedCounts(N));
  }, 60_000);
});
