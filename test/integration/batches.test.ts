/**
 * Batch workers (issue 16) against a real redis-server: the handler takes up to `size` due jobs at
 * once. Resolving completes them all, throwing fails them all (each by its own attempts), one job
 * can be failed alone, a lease lost or a cancel mid-batch touches that job only, a due job waits at
 * most `waitMs` for others (and none starts early), and concurrency counts batches in flight.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import {
  CancelledError,
  LeaseLostError,
  Queue,
  Worker,
  type BatchHandler,
  type BatchWorkerOptions,
} from '../../src/index.js';
import { partitionKeys, queueKeys } from '../../src/redis/keys.js';
import type { BatchChildConfig, BatchLedgerEntry } from '../support/batch-worker-process.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { readJsonLines } from '../support/json-lines.js';
import { groupState } from '../groups/group-state.js';
import { awaitReady, captureOutput } from '../support/ready-line.js';

const CHILD = fileURLToPath(new URL('../support/batch-worker-process.ts', import.meta.url));

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function queueOf(name: string): Queue<number> {
  const queue = new Queue<number>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  return queue;
}

function batchWorker(
  name: string,
  handler: BatchHandler<number>,
  options: Omit<BatchWorkerOptions<number>, 'connection'>,
): Worker<number> {
  const worker = new Worker<number>(name, handler, { connection: redis.url(), ...options });
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  return worker;
}

function client() {
  const c = inspector(redis.url());
  closers.push(async () => void (await c.quit()));
  return c;
}

/** Add `n` jobs due now, payloads 0..n-1; returns their ids in that order. */
async function addDue(queue: Queue<number>, n: number, opts: Parameters<Queue<number>['add']>[1] = {}) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await queue.add(i, opts)).id);
  return ids;
}

/** A promise and its resolve, to hold a handler until the test lets it go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

it('all complete: one handler call gets every due job; resolving completes them all', async () => {
  const name = uniqueQueue('batch-ok');
  const queue = queueOf(name);
  const ids = await addDue(queue, 5);
  const calls: string[][] = [];
  const completed: string[] = [];
  const worker = batchWorker(
    name,
    async (jobs) => {
      calls.push(jobs.map((j) => j.id));
    },
    { batch: { size: 5, waitMs: 60_000 } },
  );
  worker.on('completed', (job) => completed.push(job.id));
  await waitFor(() => completed.length === 5, { what: 'five completions' });

  // A full batch goes at once: with waitMs 60 s, anything else would time the test out.
  expect(calls.map((c) => [...c].sort())).toEqual([[...ids].sort()]);
  const c = client();
  const keys = queueKeys(name);
  expect((await c.zrange(keys.completed, 0, -1)).sort()).toEqual([...ids].sort());
  expect(await c.zcard(keys.leases)).toBe(0);
  expect(await c.zcard(keys.waiting)).toBe(0);
  for (const id of ids) expect((await queue.get(id))?.state).toBe('completed');
});

it('all fail: a throw fails every job of the batch, each by its own attempts', async () => {
  const name = uniqueQueue('batch-fail');
  const queue = queueOf(name);
  const once = (await queue.add(0, { attempts: 1 })).id;
  const twice = (await queue.add(1, { attempts: 2, backoff: { type: 'fixed', delay: 10 } })).id;
  const runs: Array<Array<[string, number]>> = [];
  const dead: string[] = [];
  const worker = batchWorker(
    name,
    async (jobs) => {
      runs.push(jobs.map((j) => [j.id, j.attempt]));
      throw new Error('the whole batch broke');
    },
    { batch: { size: 2 } },
  );
  worker.on('dead', (_job, _err, id) => dead.push(id));
  await waitFor(() => dead.length === 2, { what: 'both jobs to die' });

  // First run: both at attempt 1; the one with 1 attempt dies, the other is retried once.
  expect(runs[0]?.sort()).toEqual(
    [
      [once, 1],
      [twice, 1],
    ].sort(),
  );
  expect(runs.slice(1)).toEqual([[[twice, 2]]]);
  for (const [id, attempts] of [
    [once, 1],
    [twice, 2],
  ] as const) {
    const info = await queue.get(id);
    expect(info?.state).toBe('dead');
    expect(info?.attempts).toBe(attempts);
    expect(info?.lastError).toMatchObject({ message: 'the whole batch broke', attempt: attempts });
  }
});

it('one fails: job.fail(error) fails that job alone; the rest of the batch completes', async () => {
  const name = uniqueQueue('batch-one');
  const queue = queueOf(name);
  const ids = await addDue(queue, 4, { attempts: 3, backoff: { type: 'fixed', delay: 60_000 } });
  const completed: string[] = [];
  const failed: string[] = [];
  let bad = '';
  const worker = batchWorker(
    name,
    async (jobs) => {
      const row = jobs.find((j) => j.payload === 2)!;
      bad = row.id;
      await row.fail(new Error('row 2 is malformed'));
    },
    { batch: { size: 4 } },
  );
  worker.on('completed', (job) => completed.push(job.id));
  worker.on('failed', (job) => failed.push(job.id));
  await waitFor(() => completed.length === 3 && failed.length === 1, {
    what: 'three completions, one failure',
  });

  expect(failed).toEqual([bad]);
  expect(completed.sort()).toEqual(ids.filter((id) => id !== bad).sort());
  const info = await queue.get(bad);
  // Retried by its own backoff (a minute away), its error recorded.
  expect(info?.state).toBe('scheduled');
  expect(info?.attempts).toBe(1);
  expect(info?.lastError).toMatchObject({ message: 'row 2 is malformed', attempt: 1 });
  const c = client();
  expect(await c.zcard(queueKeys(name).leases)).toBe(0);
});

it('a lease lost mid-batch: that job alone is aborted and its late result refused; the others complete', async () => {
  const name = uniqueQueue('batch-lost');
  const queue = queueOf(name);
  const ids = await addDue(queue, 3);
  const victim = ids[1]!;
  const c = client();
  const keys = queueKeys(name);
  const errors: Error[] = [];
  const completions: Array<[string, number]> = [];
  const signals = new Map<string, boolean>();
  const worker = batchWorker(
    name,
    async (jobs) => {
      if (jobs.some((j) => j.attempt > 1)) return;
      // Another path takes the victim's lease: its member now scores in the past (expired).
      const member = (await c.zrange(keys.leases, 0, -1)).find((m) => m.endsWith(`|${victim}`))!;
      await c.zadd(keys.leases, 'XX', 1, member);
      await waitFor(() => errors.some((e) => e instanceof LeaseLostError && e.jobId === victim), {
        what: 'the lease keeper to find the lease lost',
      });
      for (const job of jobs) signals.set(job.id, job.signal.aborted);
    },
    { batch: { size: 3 }, leaseMs: 300, reapIntervalMs: 100 },
  );
  worker.on('error', (err) => errors.push(err));
  worker.on('completed', (job) => completions.push([job.id, job.attempt]));
  await waitFor(() => completions.length === 3, { what: 'three completions' });

  expect(signals).toEqual(
    new Map([
      [ids[0]!, false],
      [victim, true],
      [ids[2]!, false],
    ]),
  );
  expect(
    errors.some((e) => e instanceof LeaseLostError && e.jobId === victim && /result refused/.test(e.message)),
  ).toBe(true);
  // The two others completed on attempt 1; the victim was reaped and ran again.
  expect(completions.sort()).toEqual(
    [
      [ids[0]!, 1],
      [ids[2]!, 1],
      [victim, 2],
    ].sort(),
  );
  expect(await c.zcard(keys.leases)).toBe(0);
});

it('cancel of one job of a running batch aborts that job signal only; the others complete', async () => {
  const name = uniqueQueue('batch-cancel');
  const queue = queueOf(name);
  const ids = await addDue(queue, 3);
  const target = ids[0]!;
  const errors: Error[] = [];
  const completed: string[] = [];
  const reasons = new Map<string, unknown>();
  const running = gate();
  const worker = batchWorker(
    name,
    async (jobs) => {
      running.open();
      const job = jobs.find((j) => j.id === target)!;
      await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve()));
      for (const j of jobs) reasons.set(j.id, j.signal.aborted ? j.signal.reason : null);
    },
    { batch: { size: 3 } },
  );
  worker.on('error', (err) => errors.push(err));
  worker.on('completed', (job) => completed.push(job.id));
  await running.promise;
  expect(await queue.cancel(target)).toBe(true);
  await waitFor(() => completed.length === 2, { what: 'the two others to complete' });

  expect(reasons.get(target)).toBeInstanceOf(CancelledError);
  expect(reasons.get(ids[1]!)).toBeNull();
  expect(reasons.get(ids[2]!)).toBeNull();
  expect(completed.sort()).toEqual([ids[1]!, ids[2]!].sort());
  expect((await queue.get(target))?.state).toBe('cancelled');
  // The handler's result for the cancelled job was refused, and said so.
  await waitFor(() => errors.some((e) => e instanceof CancelledError && e.jobId === target), {
    what: 'the refusal to be reported',
  });
});

it('waitMs: jobs that fall due within the window join the first one; none starts before it is due', async () => {
  const name = uniqueQueue('batch-window');
  const queue = queueOf(name);
  const c = client();
  const calls: Array<{ jobs: Array<{ id: string; runAt: number; claimedAt: number }>; startedAt: number }> =
    [];
  batchWorker(
    name,
    async (jobs) => {
      const startedAt = await serverNow(c);
      calls.push({
        jobs: jobs.map((j) => ({ id: j.id, runAt: +j.runAt, claimedAt: +j.claimedAt })),
        startedAt,
      });
    },
    { batch: { size: 10, waitMs: 1_500 } },
  );
  const first = await queue.add(0);
  const later = await queue.add(1, { delay: 300 });
  const latest = await queue.add(2, { delay: 600 });
  await waitFor(() => calls.length > 0, { what: 'the batch to run' });

  expect(calls).toHaveLength(1);
  const batch = calls[0]!;
  expect(batch.jobs.map((j) => j.id).sort()).toEqual([first.id, later.id, latest.id].sort());
  for (const job of batch.jobs) {
    // Never early: claimed (and so started) at or after its due time, by the server clock.
    expect(job.claimedAt).toBeGreaterThanOrEqual(job.runAt);
    expect(batch.startedAt).toBeGreaterThanOrEqual(job.runAt);
  }
});

it('waitMs: a lone due job is held at most waitMs after it was due (server clock)', async () => {
  const name = uniqueQueue('batch-lone');
  const queue = queueOf(name);
  const c = client();
  const waitMs = 800;
  const starts: Array<{ runAt: number; startedAt: number }> = [];
  batchWorker(
    name,
    async (jobs) => {
      const startedAt = await serverNow(c);
      for (const j of jobs) starts.push({ runAt: +j.runAt, startedAt });
    },
    { batch: { size: 100, waitMs } },
  );
  await queue.add(0, { delay: 200 });
  await waitFor(() => starts.length === 1, { what: 'the lone job to run' });

  const { runAt, startedAt } = starts[0]!;
  const held = startedAt - runAt;
  expect(held).toBeGreaterThanOrEqual(0);
  // Held for the window (nothing else came), then sent: a batch waiting to fill would never run.
  // The margin is for this busy machine's timers and the TIME round trip, not a precision claim.
  expect(held).toBeLessThan(waitMs + 400);
});

it('concurrency counts batches in flight: with 2, two batches run and no third is claimed meanwhile', async () => {
  const name = uniqueQueue('batch-conc');
  const queue = queueOf(name);
  await addDue(queue, 6);
  const c = client();
  const keys = queueKeys(name);
  const release = gate();
  const inHandler: number[] = [];
  let running = 0;
  let mostRunning = 0;
  const completed: string[] = [];
  const worker = batchWorker(
    name,
    async (jobs) => {
      running++;
      mostRunning = Math.max(mostRunning, running);
      inHandler.push(jobs.length);
      await release.promise;
      running--;
    },
    { batch: { size: 2 }, concurrency: 2 },
  );
  worker.on('completed', (job) => completed.push(job.id));
  await waitFor(() => inHandler.length === 2, { what: 'two batches to run' });

  expect(inHandler).toEqual([2, 2]);
  // The third batch is not claimed while both slots are held: its jobs wait in Redis, unleased.
  expect(await c.zcard(keys.leases)).toBe(4);
  expect(await c.zcard(keys.waiting)).toBe(2);
  release.open();
  await waitFor(() => completed.length === 6, { what: 'all six to complete' });
  expect(inHandler).toEqual([2, 2, 2]);
  expect(mostRunning).toBe(2);
});

it('SIGKILL mid-batch: every job of the batch is reaped and retried', async () => {
  const name = uniqueQueue('batch-kill');
  const queue = queueOf(name);
  const ids = await addDue(queue, 5);
  const dir = mkdtempSync(join(tmpdir(), 'delayq-batch-'));
  closers.push(async () => rmSync(dir, { recursive: true, force: true }));
  const ledger = join(dir, 'ledger.jsonl');
  const config: BatchChildConfig = {
    url: redis.url(),
    queue: name,
    ledger,
    size: 5,
    waitMs: 0,
    leaseMs: 500,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(config)], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  closers.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const output = captureOutput(child);
  const ready = await awaitReady(child, exited, output, { what: 'batch worker process', timeoutMs: 20_000 });
  const batches = await waitFor(
    () => {
      const entries = readJsonLines<BatchLedgerEntry>(ledger);
      return entries.length > 0 ? entries : null;
    },
    { what: 'the child to start its batch' },
  );
  expect(batches).toHaveLength(1);
  expect(batches[0]!.jobs.map((j) => j.id).sort()).toEqual([...ids].sort());
  process.kill(ready.pid, 'SIGKILL');
  expect((await exited).signal).toBe('SIGKILL');

  // The killed batch's leases expire; a new worker reaps them and runs every job again.
  const completions: Array<[string, number]> = [];
  const rescuer = batchWorker(name, async () => {}, { batch: { size: 5 }, reapIntervalMs: 100 });
  rescuer.on('completed', (job) => completions.push([job.id, job.attempt]));
  await waitFor(() => completions.length === 5, { what: 'all five to complete after the kill' });
  expect(completions.sort()).toEqual(ids.map((id) => [id, 2]).sort());
  const c = client();
  expect(await c.zcard(queueKeys(name).leases)).toBe(0);
  expect((await c.zrange(queueKeys(name).completed, 0, -1)).sort()).toEqual([...ids].sort());
});

it('close() while a batch forms hands its jobs back uncharged; the handler never sees them', async () => {
  const name = uniqueQueue('batch-close');
  const queue = queueOf(name);
  const ids = await addDue(queue, 2);
  const c = client();
  const keys = queueKeys(name);
  const calls: string[][] = [];
  const worker = new Worker<number>(
    name,
    async (jobs) => {
      calls.push(jobs.map((j) => j.id));
    },
    { connection: redis.url(), batch: { size: 10, waitMs: 60_000 } },
  );
  // Both claimed into the forming batch, which waits for 8 more.
  await waitFor(async () => (await c.zcard(keys.leases)) === 2, { what: 'the batch to form' });
  await worker.close({ timeoutMs: 2_000 });

  expect(calls).toEqual([]);
  expect(await c.zcard(keys.leases)).toBe(0);
  for (const id of ids) {
    const info = await queue.get(id);
    expect(info?.state).toBe('scheduled');
    expect(info?.attempts).toBe(0);
  }
});

it('a partitioned queue: one batch takes due jobs of several partitions; each ack goes to its own', async () => {
  const name = uniqueQueue('batch-parts');
  const queue = new Queue<number>(name, { connection: redis.url(), partitions: 4 });
  closers.push(() => queue.close());
  const ids = await addDue(queue, 12);
  const calls: string[][] = [];
  const completed: string[] = [];
  const worker = batchWorker(
    name,
    async (jobs) => {
      calls.push(jobs.map((j) => j.id));
    },
    { partitions: 4, batch: { size: 12, waitMs: 200 } },
  );
  worker.on('completed', (job) => completed.push(job.id));
  await waitFor(() => completed.length === 12, { what: 'all twelve to complete' });

  expect(calls.flat().sort()).toEqual([...ids].sort());
  const c = client();
  const parts = partitionKeys(name, 4);
  // The jobs spread over the partitions; every one is completed in its own and none is held.
  const perPartition = await Promise.all(parts.map((keys) => c.zrange(keys.completed, 0, -1)));
  expect(perPartition.filter((members) => members.length > 0).length).toBeGreaterThan(1);
  expect(perPartition.flat().sort()).toEqual([...ids].sort());
  for (const keys of parts) expect(await c.zcard(keys.leases)).toBe(0);
});

it('with groups: a batch holds at most groups.concurrency jobs of a group, and its ack frees their slots', async () => {
  const name = uniqueQueue('batch-groups');
  const queue = queueOf(name);
  await queue.addBulk(Array.from({ length: 9 }, (_, i) => ({ payload: i, opts: { group: `t${i % 3}` } })));
  const batches: Array<Array<string | undefined>> = [];
  const completed: number[] = [];
  const worker = batchWorker(
    name,
    async (jobs) => {
      batches.push(jobs.map((j) => j.group));
    },
    { batch: { size: 9 }, groups: { concurrency: 1 }, maxSleepMs: 200 },
  );
  worker.on('completed', (job) => completed.push(job.payload));
  await waitFor(() => completed.length === 9, { what: 'all nine to complete' });

  // One job of each group per batch: the bound holds inside a batch too, and every ack freed a slot.
  for (const groups of batches) expect(new Set(groups).size).toBe(groups.length);
  expect(batches.flat().sort()).toEqual(['t0', 't0', 't0', 't1', 't1', 't1', 't2', 't2', 't2']);
  await waitFor(async () => (await groupState(queue)).empty, { what: 'group keys empty' });
});
