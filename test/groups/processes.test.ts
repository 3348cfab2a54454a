/**
 * Groups across worker processes (issue 16): the per-group bound holds for all of them together,
 * as a ledger kept outside Redis shows (handler start and end, appended synchronously by each
 * process, one machine's clock); a SIGKILLed holder's slot comes back once its lease is reaped;
 * and a one-job tenant starts within a few turns while a 100,000-job tenant drains.
 */
import { afterEach, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { phase, useWorkerProcesses, type LedgerOf } from '../support/processes.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { groupState } from './group-state.js';

const redis = useRedis();
const procs = useWorkerProcesses();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

function open<T>(name: string): Queue<T> {
  const queue = new Queue<T>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  return queue;
}

/** The most handler runs of one group that overlapped in time, per group (ledger intervals). */
function mostOverlapping(
  starts: ReadonlyArray<LedgerOf<'start'>>,
  ends: ReadonlyArray<LedgerOf<'end'>>,
): Map<string, number> {
  const events: Array<{ group: string; at: number; delta: number }> = [];
  for (const s of starts) events.push({ group: s.group ?? '', at: s.start, delta: 1 });
  for (const e of ends) events.push({ group: e.group ?? '', at: e.end, delta: -1 });
  // At equal times an end goes first: a run that ended as another began did not overlap it.
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  const now = new Map<string, number>();
  const most = new Map<string, number>();
  for (const { group, delta } of events) {
    const n = (now.get(group) ?? 0) + delta;
    now.set(group, n);
    most.set(group, Math.max(most.get(group) ?? 0, n));
  }
  return most;
}

it('three worker processes together never run more than groups.concurrency jobs of a group', async () => {
  const name = uniqueQueue('grp-proc');
  const queue = open<number>(name);
  const groups = { concurrency: 2 };
  const options = { url: redis.url(), queue: name, concurrency: 4, sleepMs: 25, groups, maxSleepMs: 200 };
  const workers = await Promise.all([procs.spawn(options), procs.spawn(options), procs.spawn(options)]);
  const jobs = 150;
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({ payload: i, opts: { id: `j${i}`, group: `tenant-${i % 5}` } })),
  );
  const ledgers = await waitFor(
    () => {
      const all = workers.flatMap((w) => w.ledger());
      return phase(all, 'end').length === jobs ? all : null;
    },
    { timeoutMs: 30_000, what: `${jobs} handler ends` },
  );
  const starts = phase(ledgers, 'start');
  const ends = phase(ledgers, 'end');
  // Every job ran once, and every one was grouped.
  expect(new Set(starts.map((s) => s.id)).size).toBe(jobs);
  expect(starts).toHaveLength(jobs);
  expect(starts.every((s) => s.group?.startsWith('tenant-'))).toBe(true);
  const most = mostOverlapping(starts, ends);
  expect([...most.values()].every((n) => n <= groups.concurrency)).toBe(true);
  // More than one process took part, and the bound was reached (12 slots for 5 groups of 2).
  expect(new Set(starts.map((s) => s.pid)).size).toBeGreaterThan(1);
  expect(Math.max(...most.values())).toBe(groups.concurrency);
  await waitFor(async () => (await groupState(queue)).empty, { what: 'group keys empty' });
});

it('frees the slot of a SIGKILLed holder once its lease is reaped: gc is empty afterwards', async () => {
  const name = uniqueQueue('grp-kill');
  const queue = open<number>(name);
  const groups = { concurrency: 1 };
  const victim = await procs.spawn({
    url: redis.url(),
    queue: name,
    concurrency: 1,
    leaseMs: 600,
    sleepMs: 60_000,
    groups,
  });
  await queue.addBulk(
    Array.from({ length: 4 }, (_, i) => ({ payload: i, opts: { id: `k${i}`, group: 'g' } })),
  );
  await waitFor(() => phase(victim.ledger(), 'start').length === 1, { what: 'the victim started a job' });
  // The holder's slot is counted while it runs.
  expect((await groupState(queue)).running).toEqual({ g: 1 });
  await victim.kill();
  const survivor = await procs.spawn({
    url: redis.url(),
    queue: name,
    concurrency: 2,
    leaseMs: 600,
    sleepMs: 0,
    reapIntervalMs: 100,
    maxSleepMs: 100,
    groups,
  });
  // The killed job is reaped (its attempt stays charged) and runs again; all four complete.
  await waitFor(() => new Set(phase(survivor.ledger(), 'end').map((e) => e.id)).size === 4, {
    timeoutMs: 20_000,
    what: 'all four jobs done by the survivor',
  });
  await waitFor(async () => (await groupState(queue)).empty, { what: 'group keys empty' });
  expect((await queue.get('k0'))?.state).toBe('completed');
});

it('a one-job tenant starts within a few turns while a 100,000-job tenant drains', async () => {
  const name = uniqueQueue('grp-fair');
  const queue = open<string>(name);
  const big = 100_000;
  const chunk = 5_000;
  for (let from = 0; from < big; from += chunk) {
    await queue.addBulk(
      Array.from({ length: chunk }, (_, i) => ({ payload: `big${from + i}`, opts: { group: 'big' } })),
    );
  }
  const concurrency = 8;
  const started: string[] = [];
  const worker = new Worker<string>(
    name,
    async (job) => {
      started.push(job.payload);
      await new Promise((r) => setTimeout(r, 1));
    },
    { connection: redis.url(), concurrency, groups: { concurrency }, maxSleepMs: 200 },
  );
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  await waitFor(() => started.length >= 200, { timeoutMs: 20_000, what: 'the big tenant draining' });
  const before = started.length;
  await queue.add('small', { group: 'small' });
  await waitFor(() => started.includes('small'), { timeoutMs: 20_000, what: 'the small tenant’s job' });
  // Starts of the big tenant between the add and the small job's start: at most what was already
  // claimed (a full batch and its prefetch) plus one turn, never a share of the 100,000.
  const waitedBehind = started.indexOf('small') - before;
  expect(waitedBehind).toBeLessThanOrEqual(3 * concurrency);
  expect(started.length).toBeLessThan(big / 10);
});
