/**
 * Groups a user can see and operate (issue 29) against a real redis-server: queue.groups.list by
 * backlog, pause and resume across workers (woken, not polled), cancel of a group's waiting jobs in
 * chunks, queue.list(state, { group }), and the refusals of bad input with nothing written.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, ValidationError, Worker, type Job } from '../../src/index.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { groupState } from './group-state.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

function open<T>(name: string, partitions = 1): Queue<T> {
  const queue = new Queue<T>(name, { connection: redis.url(), partitions });
  closers.push(() => queue.close());
  return queue;
}

function work<T>(
  name: string,
  handler: (job: Job<T>) => Promise<unknown>,
  options: ConstructorParameters<typeof Worker<T>>[2] = {},
): Worker<T> {
  const worker = new Worker<T>(name, handler, { connection: redis.url(), ...options });
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  return worker;
}

/** Every key of queue `name` with its type and size: "nothing written" is this staying equal. */
async function snapshot(name: string): Promise<string[]> {
  const r = inspector(redis.url());
  try {
    const keys = (await r.keys(`dq:{${name}*`)).sort();
    return await Promise.all(keys.map(async (k) => `${k} ${await r.type(k)} ${await r.memory('USAGE', k)}`));
  } finally {
    await r.quit();
  }
}

describe('queue.groups', () => {
  it('lists groups by backlog with waiting, due, running and paused, then those with only running jobs', async () => {
    const name = uniqueQueue('gops');
    const queue = open<number>(name);
    await queue.addBulk([
      ...Array.from({ length: 5 }, (_, i) => ({ payload: i, opts: { group: 'big' } })),
      ...Array.from({ length: 2 }, (_, i) => ({ payload: i, opts: { group: 'small' } })),
      // Three waiting, one due now and two in an hour.
      { payload: 0, opts: { group: 'mid' } },
      { payload: 1, opts: { group: 'mid', delay: '1h' } },
      { payload: 2, opts: { group: 'mid', delay: '1h' } },
    ]);
    expect(await queue.groups.list()).toEqual([
      { group: 'big', waiting: 5, due: 5, running: 0, paused: false },
      { group: 'mid', waiting: 3, due: 1, running: 0, paused: false },
      { group: 'small', waiting: 2, due: 2, running: 0, paused: false },
    ]);
    expect(await queue.groups.list({ offset: 1, limit: 1 })).toEqual([
      { group: 'mid', waiting: 3, due: 1, running: 0, paused: false },
    ]);

    // 'small' runs one job and holds it: one waiting, one running; an empty group still running
    // is listed after the groups with waiting jobs.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    await queue.groups.pause('big');
    await queue.groups.pause('mid');
    work<number>(
      name,
      async (job) => {
        started.push(`${job.group}:${job.payload}`);
        await held;
      },
      { concurrency: 4, groups: { concurrency: 2 } },
    );
    await waitFor(() => started.length === 2, { what: 'both small jobs running' });
    const list = await queue.groups.list();
    expect(list).toEqual([
      { group: 'big', waiting: 5, due: 5, running: 0, paused: true },
      { group: 'mid', waiting: 3, due: 1, running: 0, paused: true },
      { group: 'small', waiting: 0, due: 0, running: 2, paused: false },
    ]);
    expect(started.sort()).toEqual(['small:0', 'small:1']);
    release();
  });

  it('pause keeps every worker from starting the group’s jobs; resume wakes them without polling', async () => {
    const name = uniqueQueue('gops');
    const queue = open<string>(name);
    await queue.groups.pause('held');
    // A paused group with nothing waiting is listed as paused.
    expect(await queue.groups.list()).toEqual([
      { group: 'held', waiting: 0, due: 0, running: 0, paused: true },
    ]);
    expect(await queue.groups.pause('held')).toBe(false);
    const ran: string[] = [];
    // Two workers that would sleep a minute unless woken.
    for (let i = 0; i < 2; i++) {
      work<string>(name, async (job) => void ran.push(job.payload), {
        concurrency: 4,
        maxSleepMs: 60_000,
      });
    }
    await queue.addBulk([
      { payload: 'h1', opts: { group: 'held' } },
      { payload: 'h2', opts: { group: 'held' } },
      { payload: 'o1', opts: { group: 'other' } },
      { payload: 'plain' },
    ]);
    await waitFor(() => ran.length === 2, { what: 'the jobs outside the paused group' });
    // Room and time enough for a wrong claim to take the paused group's jobs.
    await new Promise((r) => setTimeout(r, 300));
    expect(ran.sort()).toEqual(['o1', 'plain']);
    // Same due time: in id order, and the ids are drawn at random.
    expect((await queue.list('scheduled', { group: 'held' })).map((j) => j.payload).sort()).toEqual([
      'h1',
      'h2',
    ]);
    expect(await groupState(queue)).toMatchObject({ groupsWaiting: 0, groupsReady: 0 });

    const resumedAt = Date.now();
    expect(await queue.groups.resume('held')).toBe(true);
    // Woken by the resume's message: well within the workers' minute of sleep (a loaded host may
    // take seconds, never the minute).
    await waitFor(() => ran.length === 4, { what: 'the resumed group', timeoutMs: 30_000 });
    expect(Date.now() - resumedAt).toBeLessThan(30_000);
    expect(await queue.groups.resume('held')).toBe(false);
    await waitFor(async () => (await groupState(queue)).empty, { what: 'group keys empty' });
  });

  it('a pause taken while jobs run holds the group after they end, across partitions', async () => {
    const name = uniqueQueue('gops');
    const queue = open<number>(name, 3);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const ran: number[] = [];
    work<number>(
      name,
      async (job) => {
        if (job.payload === 0) await held;
        ran.push(job.payload);
      },
      { concurrency: 2, partitions: 3 },
    );
    await queue.add(0, { group: 'g' });
    await waitFor(async () => (await queue.groups.list())[0]?.running === 1, { what: 'job 0 running' });
    await queue.add(1, { group: 'g' });
    await queue.groups.pause('g');
    release();
    await waitFor(() => ran.includes(0), { what: 'job 0 done' });
    await new Promise((r) => setTimeout(r, 300));
    expect(ran).toEqual([0]);
    expect(await queue.groups.list()).toEqual([{ group: 'g', waiting: 1, due: 1, running: 0, paused: true }]);
    await queue.groups.resume('g');
    await waitFor(() => ran.includes(1), { what: 'job 1 after the resume' });
  });

  it('cancel cancels every waiting job of a big group in chunks and leaves running ones', async () => {
    const name = uniqueQueue('gops');
    const queue = open<number>(name);
    await queue.addBulk(
      Array.from({ length: 1_234 }, (_, i) => ({ payload: i, opts: { group: 'bulk', delay: '1h' } })),
    );
    await queue.addBulk([
      { payload: -1, opts: { group: 'keep', id: 'keep-1' } },
      { payload: -2, opts: { id: 'plain-1' } },
    ]);
    expect(await queue.groups.cancel('bulk')).toBe(1_234);
    expect(await queue.groups.cancel('bulk')).toBe(0);
    expect(await queue.groups.list()).toEqual([
      { group: 'keep', waiting: 1, due: 1, running: 0, paused: false },
    ]);
    const counts = await queue.counts();
    expect(counts).toMatchObject({ scheduled: 2, cancelled: 1_234 });
    const [first] = await queue.list('cancelled', { limit: 1 });
    expect(first?.state).toBe('cancelled');
    expect((await queue.get('keep-1'))?.state).toBe('scheduled');
  });

  it('queue.list(state, { group }) pages one group’s scheduled jobs by due time, and its running ones', async () => {
    const name = uniqueQueue('gops');
    const queue = open<string>(name);
    await queue.addBulk([
      { payload: 'late', opts: { group: 'g', id: 'late', delay: '2h' } },
      { payload: 'early', opts: { group: 'g', id: 'early', delay: '1h' } },
      { payload: 'soon', opts: { group: 'g', id: 'soon', delay: '30m' } },
      { payload: 'x', opts: { group: 'h', id: 'other' } },
      { payload: 'y', opts: { id: 'plain' } },
    ]);
    const page = await queue.list('scheduled', { group: 'g' });
    expect(page.map((j) => [j.id, j.group, j.state])).toEqual([
      ['soon', 'g', 'scheduled'],
      ['early', 'g', 'scheduled'],
      ['late', 'g', 'scheduled'],
    ]);
    expect((await queue.list('scheduled', { group: 'g', offset: 1, limit: 1 })).map((j) => j.id)).toEqual([
      'early',
    ]);
    expect(await queue.list('active', { group: 'g' })).toEqual([]);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    work<string>(name, async () => held, { concurrency: 3 });
    await waitFor(async () => (await queue.list('active', { group: 'h' })).length === 1, {
      what: 'the job of h running',
    });
    expect((await queue.list('active', { group: 'h' })).map((j) => j.id)).toEqual(['other']);
    expect(await queue.list('active', { group: 'g' })).toEqual([]);
    release();
  });

  it('refuses a bad group name, a state it cannot list by group and unknown options, writing nothing', async () => {
    const name = uniqueQueue('gops');
    const queue = open<number>(name);
    await queue.add(1, { group: 'g', delay: '1h' });
    const before = await snapshot(name);
    for (const bad of ['', 'a\0b', 'tab\there', 42, undefined]) {
      await expect(queue.groups.pause(bad as string)).rejects.toThrow(ValidationError);
      await expect(queue.groups.resume(bad as string)).rejects.toThrow(ValidationError);
      await expect(queue.groups.cancel(bad as string)).rejects.toThrow(ValidationError);
    }
    await expect(queue.groups.pause('')).rejects.toThrow(/group must be a non-empty string/);
    await expect(queue.list('completed', { group: 'g' })).rejects.toThrow(
      /list by group takes 'scheduled' or 'active', got "completed"/,
    );
    await expect(queue.groups.list({ limt: 5 } as never)).rejects.toThrow(
      /unknown groups.list option 'limt'/,
    );
    await expect(queue.groups.list({ limit: 0 })).rejects.toThrow(ValidationError);
    expect(await snapshot(name)).toEqual(before);
  });
});
