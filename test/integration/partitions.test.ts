// A partitioned queue (`partitions: 4`) on one redis-server: each job lives in the partition its
// id hashes to, every job runs once and never early, the by-id operations reach the right
// partition, counts and lists merge the partitions, a busy partition does not starve another, and a
// client with another partition count fails fast.
import { describe, expect, it } from 'vitest';
import { PartitionMismatchError, Queue, Scheduler, ValidationError, Worker } from '../../src/index.js';
import { partitionOf } from '../../src/partition/index.js';
import { configKey, partitionCountKey, partitionKeys, queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import {
  expectEachRunsOnce,
  expectWakeFromEveryPartition,
  idIn,
  partitionedClients,
} from '../support/partitioned.js';

const redis = useRedis();
const P = 4;

const { queue, worker, closeAfter } = partitionedClients(redis.url, P);

function client(): ReturnType<typeof inspector> {
  const c = inspector(redis.url());
  closeAfter(() => c.quit());
  return c;
}

/** `count` ids that hash to `partition`. */
function idsIn(partition: number, count: number, prefix: string): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++)
    if (partitionOf(`${prefix}${i}`, P) === partition) ids.push(`${prefix}${i}`);
  return ids;
}

describe('partitions: keys', () => {
  it('one partition keeps the queue’s own keys exactly, and records partitions: 1 in its config', async () => {
    const name = uniqueQueue('p1');
    expect(partitionKeys(name, 1)).toEqual([queueKeys(name)]);
    const q = new Queue<number>(name, { connection: redis.url() });
    closeAfter(() => q.close());
    await q.add(1, { id: 'a' });
    const c = client();
    expect(await c.keys(`dq:{${name}*`)).toEqual(
      expect.arrayContaining([queueKeys(name).waiting, queueKeys(name).records]),
    );
    expect(await c.exists(partitionCountKey(name))).toBe(0);
    expect(await c.hget(configKey(name), 'partitions')).toBe('1');
  });

  it('partition i has the tag {name#i}; the count is recorded in the queue’s own config', async () => {
    const name = uniqueQueue('tags');
    const keys = partitionKeys(name, P);
    expect(keys.map((k) => k.waiting)).toEqual([0, 1, 2, 3].map((i) => `dq:{${name}#${i}}:s`));
    expect(keys.map((k) => k.records)).toEqual([0, 1, 2, 3].map((i) => `dq:{${name}#${i}}:j`));
    const q = queue<number>(name);
    await q.addBulk(Array.from({ length: 200 }, (_, i) => ({ payload: i, opts: { delay: '1h' } })));
    const c = client();
    expect(await c.hget(configKey(name), 'partitions')).toBe(String(P));
    const sizes = await Promise.all(keys.map((k) => c.zcard(k.waiting)));
    // Each job's record is in the same partition as its waiting entry.
    expect(await Promise.all(keys.map((k) => c.hlen(k.records)))).toEqual(sizes);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(200);
    // Random ids spread: every partition got a fair share (expected 50 each).
    for (const size of sizes) expect(size).toBeGreaterThan(20);
    // Nothing lands in the unpartitioned keys.
    expect(await c.exists(queueKeys(name).waiting, queueKeys(name).records)).toBe(0);
  });
});

describe('partitions: jobs', () => {
  it('job.progress goes to the id’s partition, shows in get and list, and is deleted when the job ends', async () => {
    const name = uniqueQueue('pg');
    const q = queue<string>(name);
    const c = client();
    const keys = partitionKeys(name, P);
    const ids = [0, 1, 2, 3].map((p) => idIn(p, P, 'pg-'));
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const reported = new Set<string>();
    worker<string>(
      name,
      async (job) => {
        await job.progress({ id: job.id });
        reported.add(job.id);
        await held;
      },
      { concurrency: 4 },
    );
    await q.addBulk(ids.map((id) => ({ payload: id, opts: { id } })));
    await waitFor(() => reported.size === 4, { what: 'all four to report' });
    for (const [p, id] of ids.entries()) {
      expect(await c.hget(keys[p]!.progress, id)).toBe(JSON.stringify({ id }));
      expect((await q.get(id))?.progress).toEqual({ id });
    }
    const listed = await q.list('active');
    expect(
      listed.map((j) => j.progress).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    ).toEqual(ids.map((id) => ({ id })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))));
    release();
    await waitFor(async () => (await q.counts()).active === 0, { what: 'the jobs to complete' });
    for (const k of keys) expect(await c.exists(k.progress)).toBe(0);
  });

  it('every job runs once and never before it is due', async () => {
    const name = uniqueQueue('run');
    await expectEachRunsOnce(
      queue<number>(name),
      (handler) => [worker(name, handler, { concurrency: 8 }), worker(name, handler, { concurrency: 8 })],
      Array.from({ length: 400 }, (_, i) => ({ payload: i, opts: { delay: (i * 7) % 600 } })),
      15_000,
    );
  });

  it('get, cancel, reschedule and the dead set go to the id’s partition; counts and lists merge', async () => {
    const name = uniqueQueue('byid');
    const q = queue<string>(name);
    const c = client();
    const keys = partitionKeys(name, P);
    const ids = [0, 1, 2, 3].map((p) => idIn(p, P, 'job-'));
    await q.addBulk(ids.map((id, i) => ({ payload: id, opts: { id, delay: 60_000 * (4 - i) } })));
    for (const [p, id] of ids.entries()) {
      expect(await c.zscore(keys[p]!.waiting, id)).not.toBeNull();
      for (const other of keys.filter((_, j) => j !== p))
        expect(await c.zscore(other.waiting, id)).toBeNull();
    }
    expect((await q.get(ids[2]!))?.payload).toBe(ids[2]);
    expect(await q.counts()).toEqual({
      scheduled: 4,
      due: 0,
      held: 0,
      active: 0,
      dead: 0,
      completed: 0,
      cancelled: 0,
      waitingChildren: 0,
    });
    // Merged by due time across partitions: the last added is due first.
    expect((await q.list('scheduled')).map((j) => j.id)).toEqual([...ids].reverse());
    expect((await q.list('scheduled', { offset: 1, limit: 2 })).map((j) => j.id)).toEqual([ids[2], ids[1]]);

    expect(await q.cancel(ids[0]!)).toBe(true);
    expect((await q.get(ids[0]!))?.state).toBe('cancelled');
    expect(await c.zscore(keys[0]!.cancelled, ids[0]!)).not.toBeNull();
    expect(await q.reschedule(ids[1]!, { delay: 0 })).toBe(true);
    expect(await c.zscore(keys[1]!.waiting, ids[1]!)).not.toBeNull();
    expect(await q.counts()).toEqual({
      scheduled: 3,
      due: 1,
      held: 0,
      active: 0,
      dead: 0,
      completed: 0,
      cancelled: 1,
      waitingChildren: 0,
    });

    // A job that fails for good lands in its partition's dead set; retry and remove find it there.
    const w = worker<string>(name, () => Promise.reject(new Error('boom')));
    await waitFor(async () => (await q.counts()).dead === 1, { what: 'the dead job' });
    expect(await c.zscore(keys[1]!.dead, ids[1]!)).not.toBeNull();
    await w.close();
    expect((await q.dead.list()).map((j) => j.id)).toEqual([ids[1]]);
    expect(await q.dead.retry(ids[1]!)).toBe(1);
    expect((await q.get(ids[1]!))?.state).toBe('scheduled');
    expect(await q.cancel(ids[1]!)).toBe(true);
    expect(await q.counts()).toEqual({
      scheduled: 2,
      due: 0,
      held: 0,
      active: 0,
      dead: 0,
      completed: 0,
      cancelled: 2,
      waitingChildren: 0,
    });
  });

  it('replace (debounce) reaches the id’s partition: one run per id, the last payload, at the new time', async () => {
    const name = uniqueQueue('replace');
    const q = queue<string>(name);
    const ids = [0, 1, 2, 3].map((p) => idIn(p, P, 'deb-'));
    const first = await q.addBulk(ids.map((id) => ({ payload: 'old', opts: { id, delay: '1h' } })));
    expect(first.every((r) => r.created)).toBe(true);
    const replaced = await q.addBulk(
      ids.map((id) => ({ payload: `new ${id}`, opts: { id, delay: 200, onExists: 'replace' as const } })),
    );
    expect(replaced.every((r) => r.replaced === true && !r.created)).toBe(true);
    const keys = partitionKeys(name, P);
    const c = client();
    for (const [p, id] of ids.entries()) {
      expect(await c.zscore(keys[p]!.waiting, id)).toBe(String(replaced[p]!.runAt.getTime()));
    }
    const runs: Array<{ id: string; payload: string; runAt: number; claimedAt: number }> = [];
    worker<string>(name, async (job) => {
      runs.push({
        id: job.id,
        payload: job.payload,
        runAt: job.runAt.getTime(),
        claimedAt: job.claimedAt.getTime(),
      });
    });
    await waitFor(() => runs.length === ids.length, { what: 'every replaced job run' });
    await waitFor(async () => (await q.counts()).scheduled === 0 && (await q.counts()).active === 0, {
      what: 'the queue empty',
    });
    expect(runs.map((r) => r.id).sort()).toEqual([...ids].sort());
    for (const run of runs) {
      expect(run.payload).toBe(`new ${run.id}`);
      expect(run.claimedAt).toBeGreaterThanOrEqual(run.runAt);
    }
  });

  it('cancel of a running job reaches its partition and its holder only, even where tokens repeat', async () => {
    const name = uniqueQueue('pcancel');
    const q = queue<string>(name);
    const c = client();
    const keys = partitionKeys(name, P);
    // One job in each of two partitions: a token is `<claims>.<claimed-at ms>`, so two jobs claimed
    // for the first time in the same ms hold the same token; the worker tells them apart by lease
    // member (`<token>|<id>`) and partition.
    const [a, b] = [idIn(0, P, 'run-'), idIn(2, P, 'run-')] as [string, string];
    const reasons = new Map<string, unknown>();
    const completed: string[] = [];
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const running = new Set<string>();
    const w = worker<string>(
      name,
      async (job) => {
        job.signal.addEventListener('abort', () => reasons.set(job.id, job.signal.reason as unknown));
        running.add(job.id);
        await held;
      },
      { concurrency: 2 },
    );
    w.on('completed', (job) => completed.push(job.id));
    await q.addBulk([a, b].map((id) => ({ payload: id, opts: { id } })));
    await waitFor(() => running.size === 2, { what: 'both jobs running' });
    expect(await q.cancel(a)).toBe(true);
    await waitFor(() => reasons.has(a), { what: "the cancelled job's signal" });
    expect((reasons.get(a) as Error).name).toBe('CancelledError');
    // a's lease member is gone from its partition; b's is still held in its own.
    expect(await c.zcard(keys[0]!.leases)).toBe(0);
    expect(await c.zrange(keys[2]!.leases, 0, -1)).toEqual([
      expect.stringMatching(new RegExp(`^1\\.\\d+\\|${b}$`)),
    ]);
    expect(await c.zscore(keys[0]!.cancelled, a)).not.toBeNull();
    release();
    await waitFor(() => completed.includes(b), { what: 'the other job to complete' });
    expect(reasons.has(b)).toBe(false);
    expect(completed).toEqual([b]);
    expect((await q.get(a))?.state).toBe('cancelled');
  });

  it('a partition with a constant stream of due jobs does not starve a job due in another', async () => {
    const name = uniqueQueue('fair');
    const q = queue<string>(name);
    // Partition 0: 1,500 jobs due now and more added all along, at 2 ms each far more than the
    // test waits for. Partition 2: one job due in 300 ms. One worker, one slot.
    const busy = idsIn(0, 3_000, 'busy-');
    await q.addBulk(busy.slice(0, 1_500).map((id) => ({ payload: 'busy', opts: { id } })));
    let streaming = true;
    const stream = (async () => {
      for (let i = 1_500; streaming && i < busy.length; i += 10) {
        await q.addBulk(busy.slice(i, i + 10).map((id) => ({ payload: 'busy', opts: { id } })));
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const other = idIn(2, P, 'other-');
    let lateness: number | undefined;
    let busyRuns = 0;
    let busyRunsBeforeOther = 0;
    const w = worker<string>(name, async (job) => {
      if (job.payload === 'other') {
        lateness = job.claimedAt.getTime() - job.runAt.getTime();
        busyRunsBeforeOther = busyRuns;
      } else busyRuns++;
      await new Promise((r) => setTimeout(r, 2));
    });
    await w.waitUntilReady();
    const busyRunsAtAdd = busyRuns;
    await q.add('other', { id: other, delay: 300 });
    await waitFor(() => lateness !== undefined, { timeoutMs: 5_000, what: 'the job of the quiet partition' });
    // The busy partition is served on both sides of the other job: waiting for a job due in another
    // partition does not stop its claims, and that job, once served, does not either. (How many
    // jobs one slot runs in 300 ms is the machine's speed: 10 on a loaded one, so no count here.)
    await waitFor(() => busyRuns > busyRunsBeforeOther + 10, { what: 'busy jobs after the other job' });
    streaming = false;
    await stream;
    expect(lateness).toBeGreaterThanOrEqual(0);
    expect(lateness).toBeLessThan(500);
    expect(busyRunsBeforeOther).toBeGreaterThan(busyRunsAtAdd);
    // And still had plenty waiting: the other job was not served because the busy one ran dry.
    expect((await q.counts()).scheduled).toBeGreaterThan(500);
  });

  it('idle workers wake for a job added to any partition', async () => {
    const name = uniqueQueue('wake');
    await expectWakeFromEveryPartition(
      queue<number>(name),
      (handler, options) => worker(name, handler, options),
      P,
      500,
      () => inspector(redis.url()),
    );
  });
});

describe('partitions: agreement and limits', () => {
  it('a Queue or Worker with another partition count fails fast, naming both', async () => {
    const name = uniqueQueue('mismatch');
    await queue<number>(name).add(1);
    const w = new Worker(name, async () => {}, { connection: redis.url(), partitions: 2, autorun: false });
    w.on('error', () => {});
    closeAfter(() => w.close());
    const err = await w.waitUntilReady().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PartitionMismatchError);
    expect((err as Error).message).toMatch(/partitions: 4 but this client uses partitions: 2/);
    const plain = new Queue<number>(name, { connection: redis.url() });
    closeAfter(() => plain.close());
    await expect(plain.add(1)).rejects.toThrow(/partitions: 4 but this client uses partitions: 1/);
  });

  it('a queue already used unpartitioned refuses partitions, and records nothing', async () => {
    const name = uniqueQueue('was-one');
    const plain = new Queue<number>(name, { connection: redis.url() });
    closeAfter(() => plain.close());
    await plain.add(1);
    await expect(queue<number>(name).add(1)).rejects.toThrow(
      /partitions: 1 but this client uses partitions: 4/,
    );
    expect(await client().hget(configKey(name), 'partitions')).toBe('1');
  });

  it('refuses what cannot work across partitions: the wheel, a rate limit, repeating schedules', async () => {
    const name = uniqueQueue('refuse');
    expect(() => new Queue(name, { partitions: 2, strategy: 'wheel', connection: redis.url() })).toThrow(
      /strategy 'wheel'/,
    );
    expect(
      () => new Worker(name, async () => {}, { partitions: 2, strategy: 'wheel', autorun: false }),
    ).toThrow(/strategy 'wheel'/);
    expect(
      () => new Worker(name, async () => {}, { partitions: 2, limit: { max: 1, per: 1000 }, autorun: false }),
    ).toThrow(/limit/);
    for (const bad of [0, 1.5, 1025, '2']) {
      expect(() => new Queue(name, { partitions: bad as number, connection: redis.url() })).toThrow(
        ValidationError,
      );
    }
    const q = queue<number>(name);
    expect(() => q.schedule('s', { every: '1m' }, 1)).toThrow(/unpartitioned/);
    expect(() => new Scheduler(q as Queue<unknown>)).toThrow(/unpartitioned/);
  });

  it('events are read per partition', async () => {
    const name = uniqueQueue('events');
    const q = queue<number>(name);
    const id = idIn(3, P, 'ev-');
    await q.add(1, { id, delay: '1h' });
    // A failure event (always written; 'added' is a routine one, written only with events 'all').
    expect(await q.cancel(id)).toBe(true);
    await expect(q.events({ from: '0' }).next()).rejects.toThrow(/partition: 0 to 3/);
    const events = q.events({ from: '0', partition: 3 });
    const first = await events.next();
    await events.return(undefined);
    expect(first.value).toMatchObject({ type: 'cancelled', jobId: id });
  });
});

describe('partitions: pause and resume', () => {
  it('pause writes every partition: nothing runs in any of them until the resume, then all run at once', async () => {
    const name = uniqueQueue('pause');
    const q = queue<string>(name);
    const ran: Array<{ id: string; claimedAt: number }> = [];
    worker<string>(name, async (job) => void ran.push({ id: job.id, claimedAt: job.claimedAt.getTime() }), {
      maxSleepMs: 3_600_000,
    });
    await q.pause();
    expect(await q.isPaused()).toBe(true);
    const c = client();
    const keys = partitionKeys(name, P);
    expect(await Promise.all(keys.map((k) => c.exists(k.paused)))).toEqual([1, 1, 1, 1]);
    // One job due now in every partition.
    const ids = [0, 1, 2, 3].map((p) => idsIn(p, 1, `job-${p}-`)[0]!);
    for (const id of ids) await q.add(id, { id });
    const [seconds] = await c.time();
    await waitFor(async () => Number((await c.time())[0]) >= Number(seconds) + 1, {
      what: 'a second passed',
    });
    expect(ran).toEqual([]);
    expect(await q.counts()).toMatchObject({ scheduled: 4, due: 4, active: 0 });
    // A pause half undone (one partition resumed by hand) still shows as paused.
    await c.del(keys[2]!.paused);
    expect(await q.isPaused()).toBe(true);
    await q.resume();
    expect(await q.isPaused()).toBe(false);
    await waitFor(() => ran.length === 4, {
      what: 'every partition’s job after the resume',
      timeoutMs: 5_000,
    });
    expect(ran.map((r) => r.id).sort()).toEqual([...ids].sort());
  });
});
