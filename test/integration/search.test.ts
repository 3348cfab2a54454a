/**
 * queue.search against a real redis-server (issue 33): every state and filter (state, group, id
 * prefix, time range), in the documented order; pages through a cursor that is stable while the
 * queue changes and bounded in what one call looks at; partitions merged by time; the wheel
 * strategy; bad input refused with a ValidationError naming the option, nothing written.
 */
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  Queue,
  UnrecoverableError,
  ValidationError,
  Worker,
  type JobInfo,
  type QueueOptions,
  type SearchOptions,
} from '../../src/index.js';
import { partitionOf } from '../../src/partition/index.js';
import { checkSearch, searchAll } from '../../src/queue/search.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { internals } from '../support/internals.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function client(): Redis {
  const c = inspector(redis.url());
  closers.push(async () => void (await c.quit()));
  return c;
}

function queueOf<T>(name: string, options: QueueOptions<T> = {}): Queue<T> {
  const queue = new Queue<T>(name, { connection: redis.url(), ...options });
  closers.push(() => queue.close());
  return queue;
}

/** Every job a search finds, page by page (limit per page), and the number of pages. */
async function everything<T>(
  queue: Queue<T>,
  options: Omit<SearchOptions, 'cursor'>,
): Promise<{ jobs: Array<JobInfo<T>>; pages: number }> {
  const jobs: Array<JobInfo<T>> = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: { jobs: Array<JobInfo<T>>; cursor: string | null } = await queue.search({
      ...options,
      cursor,
    });
    expect(page.jobs.length).toBeLessThanOrEqual(options.limit ?? 50);
    jobs.push(...page.jobs);
    cursor = page.cursor;
    pages++;
    expect(pages).toBeLessThan(10_000);
  } while (cursor !== null);
  return { jobs, pages };
}

const ids = (jobs: ReadonlyArray<{ id: string }>) => jobs.map((j) => j.id);

/** A gate the test opens to let a handler finish. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = () => {};
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/**
 * A queue with jobs in every state and class: completed c:1 c:2, dead d:1, running a:1 (group t1)
 * and a:2, cancelled x:1; waiting: prioritized not yet due p:1 (prio 3) and due r:1 (prio -2),
 * r:2 (prio 5), default class s:1 s:2 s:3 (due in 1, 2, 3 h), grouped g:1 (t1, due in 1 h),
 * g:2 (t2, due in 2 h). The queue is paused so the due ones stay.
 */
async function everyState(name: string) {
  const queue = queueOf<string>(name);
  const hold = gate();
  const worker = new Worker<string>(
    name,
    async (job) => {
      if (job.payload === 'fail') throw new UnrecoverableError('no');
      if (job.payload === 'hold') await hold.wait;
      return job.payload;
    },
    { connection: redis.url(), concurrency: 4, keepCompleted: { count: 100, age: '1h' } },
  );
  closers.push(async () => {
    hold.open();
    await worker.close({ timeoutMs: 2_000 });
  });
  await queue.add('ok', { id: 'c:1' });
  await waitFor(async () => (await queue.get('c:1'))?.state === 'completed');
  await queue.add('ok', { id: 'c:2' });
  await queue.add('fail', { id: 'd:1', attempts: 1 });
  await queue.add('hold', { id: 'a:1', group: 't1' });
  await queue.add('hold', { id: 'a:2' });
  await waitFor(async () => (await queue.get('c:2'))?.state === 'completed');
  await waitFor(async () => (await queue.get('d:1'))?.state === 'dead');
  await waitFor(async () => (await queue.counts()).active === 2);
  await queue.pause();
  await queue.add('x', { id: 'x:1', delay: '1h' });
  expect(await queue.cancel('x:1')).toBe(true);
  await queue.add('p', { id: 'p:1', delay: '1h', priority: 3 });
  await queue.add('r', { id: 'r:1', priority: -2 });
  await queue.add('r', { id: 'r:2', priority: 5 });
  for (const [i, id] of ['s:1', 's:2', 's:3'].entries()) await queue.add('s', { id, delay: `${i + 1}h` });
  await queue.add('g', { id: 'g:1', group: 't1', delay: '1h' });
  await queue.add('g', { id: 'g:2', group: 't2', delay: '2h' });
  return queue;
}

describe('queue.search', () => {
  it('finds every state and class, in the documented order', async () => {
    const queue = await everyState(uniqueQueue('search'));
    const { jobs } = await everything(queue, { limit: 3 });
    expect(ids(jobs)).toEqual([
      'p:1',
      'r:1',
      'r:2',
      's:1',
      's:2',
      's:3',
      'g:1',
      'g:2',
      ...ids(jobs.slice(8, 10)).sort(), // running: by lease deadline
      'd:1',
      'c:2',
      'c:1', // newest first
      'x:1',
    ]);
    expect(ids(jobs.slice(8, 10)).sort()).toEqual(['a:1', 'a:2']);
    expect(jobs.map((j) => j.state)).toEqual([
      ...Array<string>(8).fill('scheduled'),
      'active',
      'active',
      'dead',
      'completed',
      'completed',
      'cancelled',
    ]);
    const running = jobs.find((j) => j.id === 'a:1')!;
    expect(running.lease?.workerId).toBeTruthy();
    expect(running.group).toBe('t1');
    expect(jobs.find((j) => j.id === 'c:1')?.result).toBe('ok');
  });

  it('filters by state, id prefix and group', async () => {
    const queue = await everyState(uniqueQueue('search'));
    expect(ids((await queue.search({ state: 'completed' })).jobs)).toEqual(['c:2', 'c:1']);
    expect(ids((await queue.search({ state: 'dead' })).jobs)).toEqual(['d:1']);
    expect(ids((await queue.search({ state: 'cancelled' })).jobs)).toEqual(['x:1']);
    expect(ids((await queue.search({ idPrefix: 's:' })).jobs)).toEqual(['s:1', 's:2', 's:3']);
    expect(ids((await queue.search({ idPrefix: 'r' })).jobs)).toEqual(['r:1', 'r:2']);
    expect(ids((await queue.search({ idPrefix: 'g:2', state: 'scheduled' })).jobs)).toEqual(['g:2']);
    expect(ids((await queue.search({ idPrefix: 'nothing' })).jobs)).toEqual([]);
    expect((await queue.search({ idPrefix: 'nothing' })).cursor).toBeNull();
    // A group's waiting and running jobs; finished jobs are not kept by group.
    expect(ids((await queue.search({ group: 't1' })).jobs)).toEqual(['g:1', 'a:1']);
    expect(ids((await queue.search({ group: 't1', state: 'active' })).jobs)).toEqual(['a:1']);
    expect(ids((await queue.search({ group: 't2', state: 'scheduled' })).jobs)).toEqual(['g:2']);
    expect(ids((await queue.search({ group: 'none' })).jobs)).toEqual([]);
    expect(ids((await queue.search({ group: 't1', idPrefix: 'g' })).jobs)).toEqual(['g:1']);
  });

  it('filters by the job’s time in its state: due, started, ended', async () => {
    const queue = await everyState(uniqueQueue('search'));
    const s2 = (await queue.get('s:2'))!;
    const due = s2.runAt.getTime();
    expect(ids((await queue.search({ state: 'scheduled', from: due, to: due })).jobs)).toEqual(['s:2']);
    // Grouped jobs by their due time too; prioritized ones (due and not) alike.
    const g2 = (await queue.get('g:2'))!.runAt;
    expect(ids((await queue.search({ state: 'scheduled', from: due, to: g2 })).jobs)).toEqual(['s:2', 'g:2']);
    const r1 = (await queue.get('r:1'))!.runAt.getTime();
    expect(ids((await queue.search({ idPrefix: 'r:1', from: r1, to: r1 })).jobs)).toEqual(['r:1']);
    expect(ids((await queue.search({ idPrefix: 'r:1', from: r1 + 1 })).jobs)).toEqual([]);
    // Running: when it started (its lease's start), not its lease deadline.
    const a1 = (await queue.get('a:1'))!.lease!.startedAt.getTime();
    expect(ids((await queue.search({ state: 'active', from: a1, to: a1 })).jobs)).toContain('a:1');
    expect(ids((await queue.search({ state: 'active', to: a1 - 1 })).jobs)).not.toContain('a:1');
    // Finished: when it ended.
    const c1 = (await queue.get('c:1'))!.finishedAt!.getTime();
    const c2 = (await queue.get('c:2'))!.finishedAt!.getTime();
    expect(c2).toBeGreaterThanOrEqual(c1);
    expect(ids((await queue.search({ state: 'completed', to: c1 })).jobs)).toContain('c:1');
    expect(ids((await queue.search({ state: 'completed', from: c2 + 1 })).jobs)).toEqual([]);
    expect(ids((await queue.search({ from: new Date(Date.now() + 10 * 3_600_000) })).jobs)).toEqual([]);
  });

  it('pages of any size give the same jobs as one page, each once', async () => {
    const queue = await everyState(uniqueQueue('search'));
    const whole = ids((await queue.search({ limit: 1000 })).jobs);
    expect(whole).toHaveLength(14);
    for (const limit of [1, 2, 5]) {
      const { jobs, pages } = await everything(queue, { limit });
      expect(ids(jobs)).toEqual(whole);
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(14 / limit));
    }
  });

  it('a cursor is stable while jobs come and go: every job there throughout is found once, in order', async () => {
    const name = uniqueQueue('search');
    const queue = queueOf<number>(name);
    const base = Date.now() + 3_600_000;
    await queue.addBulk(
      Array.from({ length: 200 }, (_, i) => ({ payload: i, opts: { id: `j${i}`, runAt: base + i * 10 } })),
    );
    const found: string[] = [];
    let cursor: string | null = null;
    let round = 0;
    do {
      const page: { jobs: Array<JobInfo<number>>; cursor: string | null } = await queue.search({
        state: 'scheduled',
        limit: 10,
        cursor,
      });
      found.push(...ids(page.jobs));
      cursor = page.cursor;
      round++;
      // Between pages: jobs added before and after the position, and not-yet-seen ones cancelled.
      await queue.add(-1, { id: `early${round}`, runAt: base - round });
      await queue.add(-1, { id: `late${round}`, runAt: base + 5_000 + round });
      await queue.cancel(`j${199 - round}`);
    } while (cursor !== null);
    const cancelled = new Set(Array.from({ length: round }, (_, r) => `j${199 - (r + 1)}`));
    const stayed = Array.from({ length: 200 }, (_, i) => `j${i}`).filter((id) => !cancelled.has(id));
    expect(found.filter((id) => id.startsWith('j'))).toEqual(expect.arrayContaining(stayed));
    expect(new Set(found).size).toBe(found.length);
    // In due order: the stayed ones keep their order.
    const order = found.filter((id) => stayed.includes(id));
    expect(order).toEqual(stayed);
    // Jobs added behind the position are not found; those ahead of it are.
    expect(found.filter((id) => id.startsWith('early'))).toEqual([]);
    expect(found.filter((id) => id.startsWith('late')).length).toBeGreaterThan(0);
  });

  it('looks at a bounded number of entries per call: a page may be short, the cursor goes on', async () => {
    const name = uniqueQueue('search');
    const queue = queueOf<number>(name);
    await queue.addBulk(
      Array.from({ length: 1_000 }, (_, i) => ({
        payload: i,
        opts: { id: `n${String(i).padStart(4, '0')}`, delay: '1h' },
      })),
    );
    await queue.add(1, { id: 'needle', delay: '2h' });
    const { layout } = await internals(queue).settle();
    const scan = { perStep: 50, perCall: 120 };
    let cursor: string | null = null;
    let calls = 0;
    const found: string[] = [];
    do {
      const page = await searchAll(
        internals(queue),
        layout,
        checkSearch({ idPrefix: 'needle', cursor }),
        scan,
      );
      found.push(...page.jobs.map((j) => j.id));
      cursor = page.cursor;
      calls++;
      if (calls === 1) expect(page.jobs).toEqual([]);
    } while (cursor !== null && calls < 100);
    expect(found).toEqual(['needle']);
    // 1,001 entries, at most 120 (+ one step) a call.
    expect(calls).toBeGreaterThanOrEqual(6);
    expect(calls).toBeLessThanOrEqual(10);
    // With the default budget, one call looks at the whole of this queue.
    expect(ids((await queue.search({ idPrefix: 'needle' })).jobs)).toEqual(['needle']);
  });

  it('a cursor is plain text: another process, another Queue, goes on from it', async () => {
    const name = uniqueQueue('search');
    const queue = queueOf<number>(name);
    await queue.addBulk(
      Array.from({ length: 5 }, (_, i) => ({ payload: i, opts: { id: `k${i}`, delay: `${i + 1}m` } })),
    );
    const first = await queue.search({ limit: 2 });
    expect(ids(first.jobs)).toEqual(['k0', 'k1']);
    const other = queueOf<number>(name);
    const next = await other.search({ limit: 10, cursor: first.cursor });
    expect(ids(next.jobs)).toEqual(['k2', 'k3', 'k4']);
    expect(next.cursor).toBeNull();
  });
});

describe('queue.search over partitions and strategies', () => {
  it('merges partitions by time, ties by id, with pages of any size', async () => {
    const name = uniqueQueue('search');
    const queue = queueOf<number>(name, { partitions: 4 });
    const at = Date.now() + 3_600_000;
    // 60 jobs over 20 due times, three at each: ties broken by id bytes.
    await queue.addBulk(
      Array.from({ length: 60 }, (_, i) => ({
        payload: i,
        opts: { id: `m${i}`, runAt: at + (i % 20) * 1000 },
      })),
    );
    const expected = Array.from({ length: 60 }, (_, i) => ({ id: `m${i}`, due: at + (i % 20) * 1000 }))
      .sort((a, b) => a.due - b.due || Buffer.compare(Buffer.from(a.id), Buffer.from(b.id)))
      .map((j) => j.id);
    const spread = new Set(expected.map((id) => partitionOf(id, 4)));
    expect(spread.size).toBeGreaterThan(1);
    for (const limit of [1, 7, 60]) {
      expect(ids((await everything(queue, { state: 'scheduled', limit })).jobs)).toEqual(expected);
    }
    expect(ids((await everything(queue, { idPrefix: 'm1', limit: 3 })).jobs)).toEqual(
      expected.filter((id) => id.startsWith('m1')),
    );
    const from = at + 5_000;
    expect(ids((await everything(queue, { from, to: from + 1_000, limit: 2 })).jobs)).toEqual(
      expected.filter((id) => {
        const due = at + (Number(id.slice(1)) % 20) * 1000;
        return due >= from && due <= from + 1_000;
      }),
    );
  });

  it('merges finished jobs of every partition newest first', async () => {
    const name = uniqueQueue('search');
    const queue = queueOf<number>(name, { partitions: 3 });
    for (let i = 0; i < 12; i++) {
      await queue.add(i, { id: `c${i}`, delay: '1h' });
      expect(await queue.cancel(`c${i}`)).toBe(true);
    }
    const { jobs } = await everything(queue, { state: 'cancelled', limit: 5 });
    const times = jobs.map((j) => j.cancelledAt!.getTime());
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(ids(jobs).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `c${i}`).sort());
  });

  it('finds the wheel’s waiting jobs', async () => {
    const name = uniqueQueue('search');
    const queue = queueOf<number>(name, { strategy: 'wheel' });
    const now = Date.now();
    await queue.addBulk(
      Array.from({ length: 40 }, (_, i) => ({ payload: i, opts: { id: `w${i}`, delay: 60_000 + i * 1000 } })),
    );
    const all = await everything(queue, { state: 'scheduled', limit: 6 });
    expect(ids(all.jobs).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `w${i}`).sort());
    const some = await everything(queue, { idPrefix: 'w1', from: now + 60_000 + 12_000, limit: 1 });
    expect(ids(some.jobs).sort()).toEqual(['w12', 'w13', 'w14', 'w15', 'w16', 'w17', 'w18', 'w19']);
    expect(some.jobs.every((j) => j.state === 'scheduled' && j.payload === Number(j.id.slice(1)))).toBe(true);
    // More jobs than a small hash holds (HSCAN then walks it in batches): each found once.
    await queue.addBulk(
      Array.from({ length: 700 }, (_, i) => ({ payload: i, opts: { id: `v${i}`, delay: 120_000 + i } })),
    );
    const many = await everything(queue, { idPrefix: 'v', limit: 50 });
    expect(many.jobs).toHaveLength(700);
    expect(new Set(ids(many.jobs)).size).toBe(700);
  });
});

describe('queue.search refuses bad input', () => {
  const bad: Array<[string, unknown, string]> = [
    ['an unknown option', { limt: 5 }, 'limt'],
    ['an unknown state', { state: 'waiting' }, 'state'],
    ['a group with a finished state', { group: 't', state: 'dead' }, 'group'],
    ['an empty group', { group: '' }, 'group'],
    ['an empty idPrefix', { idPrefix: '' }, 'idPrefix'],
    ['an idPrefix that is not a string', { idPrefix: 42 }, 'idPrefix'],
    ['an idPrefix with a line break', { idPrefix: 'a\nb' }, 'idPrefix'],
    ['from after to', { from: 2_000, to: 1_000 }, 'from'],
    ['an invalid Date', { from: new Date('nope') }, 'from'],
    ['a negative time', { to: -1 }, 'to'],
    ['a fractional time', { to: 1.5 }, 'to'],
    ['limit 0', { limit: 0 }, 'limit'],
    ['limit 1001', { limit: 1001 }, 'limit'],
    ['a fractional limit', { limit: 2.5 }, 'limit'],
    ['a cursor that is not a string', { cursor: 5 }, 'cursor'],
    ['a cursor delayq did not give', { cursor: 'dq1.eyJ2IjoxfQ' }, 'cursor'],
    ['a garbled cursor', { cursor: 'hello' }, 'cursor'],
  ];
  for (const [what, options, path] of bad) {
    it(`${what}: ValidationError naming ${path}, nothing written`, async () => {
      const name = uniqueQueue('search');
      const queue = queueOf<number>(name);
      await queue.add(1, { id: 'one', delay: '1h' });
      const c = client();
      const before = await Promise.all((await c.keys(`dq:{${name}}:*`)).sort().map((k) => c.dumpBuffer(k)));
      const err = await queue.search(options as SearchOptions).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues[0]?.path).toBe(path);
      const after = await Promise.all((await c.keys(`dq:{${name}}:*`)).sort().map((k) => c.dumpBuffer(k)));
      expect(after).toEqual(before);
    });
  }

  it('a cursor of another search, or another queue, is refused', async () => {
    const queue = queueOf<number>(uniqueQueue('search'));
    await queue.addBulk([1, 2, 3].map((payload) => ({ payload, opts: { delay: '1h' } })));
    const { cursor } = await queue.search({ limit: 1 });
    expect(cursor).toEqual(expect.any(String));
    await expect(queue.search({ limit: 1, cursor, idPrefix: 'x' })).rejects.toThrow(
      /belongs to another search/,
    );
    await expect(queue.search({ limit: 1, cursor, state: 'scheduled' })).rejects.toThrow(/another search/);
    const other = queueOf<number>(uniqueQueue('search'));
    await expect(other.search({ limit: 1, cursor })).rejects.toThrow(/another search/);
    // The same search with another limit goes on.
    expect((await queue.search({ limit: 5, cursor })).jobs).toHaveLength(2);
  });
});
