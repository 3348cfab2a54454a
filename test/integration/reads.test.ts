/**
 * The read scripts on layout 2 (get.lua, counts.lua, list.lua) and the decode of what they return,
 * against a queue seeded key by key: every state, every waiting class, the holder registry, errors,
 * progress and a kept result.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Codec } from '../../src/codec/codec.js';
import { counts } from '../../src/operations/counts.js';
import { getJob } from '../../src/operations/get.js';
import { listJobs } from '../../src/operations/list.js';
import { ZSET_LAYOUT, type Layout } from '../../src/operations/wheel.js';
import { ServerClock } from '../../src/clock.js';
import { Queue } from '../../src/queue.js';
import { Worker } from '../../src/worker.js';
import { toInfo } from '../../src/queue/info.js';
import {
  CANCELLED_RECORD,
  COMPLETED_RECORD,
  completedRecordWithResult,
  encodeRecord,
  NEW_JOB_HEADER,
} from '../../src/record/index.js';
import { queueKeys, wheelBucketKey, type QueueKeys } from '../../src/redis/keys.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
let client: Redis;
beforeAll(() => {
  client = inspector(redis.url());
});
afterAll(async () => {
  await client.quit();
});

const TWO42 = 2 ** 42;
/** A codec that reads payload bytes as UTF-8 text: enough to see which bytes came back. */
const text = {
  name: 'text',
  encode: () => Buffer.alloc(0),
  decode: () => {
    throw new Error('unused');
  },
  decodePayload: (bytes: Buffer) => bytes.toString('utf8'),
} as unknown as Codec;

interface Seeded {
  keys: QueueKeys;
  now: number;
  claimedAt: number;
}

/** One job in every state and waiting class, written the way the layout-2 scripts write them. */
async function seed(): Promise<Seeded> {
  const keys = queueKeys(uniqueQueue('reads'));
  const now = await serverNow(client);
  const claimedAt = now - 100;
  const plain = (payload: string): Buffer => encodeRecord(NEW_JOB_HEADER, Buffer.from(payload));
  await client
    .multi()
    .hset(keys.records, 'w-later', plain('later'), 'w-due', plain('due'))
    .zadd(keys.waiting, now + 60_000, 'w-later', now - 1_000, 'w-due')
    .hset(keys.records, 'p-later', encodeRecord({ ...NEW_JOB_HEADER, priority: -5 }, Buffer.from('pl')))
    .zadd(keys.prioWaiting, now + 30_000, '-5:p-later')
    .hset(keys.records, 'p-due', encodeRecord({ ...NEW_JOB_HEADER, priority: 3 }, Buffer.from('pd')))
    .zadd(keys.prioReady, (3 + 1024) * TWO42 + (now - 500), '3:p-due')
    .hset(
      keys.records,
      'running',
      encodeRecord(
        {
          ...NEW_JOB_HEADER,
          attempts: 1,
          claims: 2,
          claimedAt,
          runDue: now - 110,
          holder: 7,
          maxAttempts: 5,
        },
        Buffer.from('run'),
      ),
    )
    .zadd(keys.leases, now + 15_000, `2.${claimedAt}|running`)
    .hset(keys.holders, '#', '7', '7', 'worker|with|bars|1767225600000')
    .hset(keys.progress, 'running', '{"pct":50}')
    .hset(
      keys.records,
      'died',
      encodeRecord(
        {
          ...NEW_JOB_HEADER,
          attempts: 3,
          claims: 3,
          claimedAt: now - 50,
          runDue: now - 60,
          holder: 7,
          hasError: true,
        },
        Buffer.from('dd'),
      ),
    )
    .zadd(keys.dead, now - 40, 'died')
    .hset(keys.errors, 'died', JSON.stringify({ name: 'Error', message: 'boom', at: now - 40, attempt: 3 }))
    .hset(
      keys.records,
      'done-result',
      completedRecordWithResult(Buffer.from('42')),
      'done-plain',
      COMPLETED_RECORD,
    )
    .zadd(keys.completed, now - 20, 'done-result', now - 10, 'done-plain')
    .hset(keys.records, 'gone', CANCELLED_RECORD)
    .zadd(keys.cancelled, now - 5, 'gone')
    .set(keys.paused, String(now))
    .exec();
  return { keys, now, claimedAt };
}

describe('counts.lua', () => {
  it('counts every state and waiting class, the pause, and the earliest due head', async () => {
    const { keys, now } = await seed();
    const got = await counts(client, keys, ZSET_LAYOUT);
    expect({ ...got, now: undefined }).toEqual({
      scheduled: 4,
      due: 2, // w-due (s, due) and p-due (r)
      held: 0,
      active: 1,
      dead: 1,
      completed: 2,
      cancelled: 1,
      waitingChildren: 0,
      paused: true,
      now: undefined,
      nextDue: now - 1_000,
      histogram: null,
    });
    expect(got.now).toBeGreaterThanOrEqual(now);
  });

  it('answers zeros and no next due time for a queue that holds nothing', async () => {
    const got = await counts(client, queueKeys(uniqueQueue('reads')), ZSET_LAYOUT);
    expect({ ...got, now: 0 }).toEqual({
      scheduled: 0,
      due: 0,
      held: 0,
      active: 0,
      dead: 0,
      completed: 0,
      cancelled: 0,
      waitingChildren: 0,
      paused: false,
      now: 0,
      nextDue: -1,
      histogram: null,
    });
  });
});

describe('get.lua', () => {
  it('tells each state from the record and the sets, with holder, member, error and progress', async () => {
    const { keys, now, claimedAt } = await seed();
    const get = (id: string) => getJob(client, keys, id, ZSET_LAYOUT);

    expect(await get('absent')).toBeNull();
    expect(await get('w-later')).toMatchObject({ state: 'scheduled', score: now + 60_000, member: null });
    expect(await get('p-later')).toMatchObject({ state: 'scheduled', score: now + 30_000 });
    // r's score carries the priority; get answers the due time alone.
    expect(await get('p-due')).toMatchObject({ state: 'scheduled', score: now - 500 });
    expect(await get('running')).toMatchObject({
      state: 'active',
      score: now + 15_000,
      member: `2.${claimedAt}|running`,
      holder: { workerId: 'worker|with|bars', workerStartedAt: 1767225600000 },
      progress: '{"pct":50}',
      lastError: null,
    });
    expect(await get('died')).toMatchObject({
      state: 'dead',
      score: now - 40,
      lastError: { name: 'Error', message: 'boom' },
      holder: { workerId: 'worker|with|bars' },
      progress: null,
    });
    expect(await get('done-result')).toMatchObject({ state: 'completed', score: now - 20 });
    expect(await get('gone')).toMatchObject({ state: 'cancelled', score: now - 5, holder: null });
  });

  it('shows a job whose lease member is gone (reaped) as waiting only where its class puts it', async () => {
    const { keys, claimedAt } = await seed();
    // The lease ended (reap) and the job was placed again: the old member is no longer in `a`.
    await client.zrem(keys.leases, `2.${claimedAt}|running`);
    expect(await getJob(client, keys, 'running', ZSET_LAYOUT)).toBeNull();
    await client.zadd(keys.waiting, 123, 'running');
    expect(await getJob(client, keys, 'running', ZSET_LAYOUT)).toMatchObject({
      state: 'scheduled',
      score: 123,
    });
  });
});

describe('list.lua', () => {
  const ids = async (keys: QueueKeys, state: Parameters<typeof listJobs>[2], offset = 0, limit = 50) =>
    (await listJobs(client, keys, state, { offset, limit }, ZSET_LAYOUT)).map((j) => j.id);

  it('pages waiting jobs: due prioritized first, then every other by due time', async () => {
    const { keys } = await seed();
    expect(await ids(keys, 'scheduled')).toEqual(['p-due', 'w-due', 'p-later', 'w-later']);
    expect(await ids(keys, 'scheduled', 1, 2)).toEqual(['w-due', 'p-later']);
    expect(await ids(keys, 'scheduled', 2, 5)).toEqual(['p-later', 'w-later']);
    expect(await ids(keys, 'scheduled', 4, 5)).toEqual([]);
  });

  it('pages the other states, finished ones most recent first', async () => {
    const { keys, now, claimedAt } = await seed();
    const [running] = await listJobs(client, keys, 'active', { offset: 0, limit: 10 }, ZSET_LAYOUT);
    expect(running).toMatchObject({
      id: 'running',
      state: 'active',
      score: now + 15_000,
      member: `2.${claimedAt}|running`,
      holder: { workerId: 'worker|with|bars' },
      progress: '{"pct":50}',
    });
    expect(await ids(keys, 'completed')).toEqual(['done-plain', 'done-result']);
    expect(await ids(keys, 'completed', 1, 1)).toEqual(['done-result']);
    expect(await ids(keys, 'cancelled')).toEqual(['gone']);
    const [died] = await listJobs(client, keys, 'dead', { offset: 0, limit: 10 }, ZSET_LAYOUT);
    expect(died).toMatchObject({ id: 'died', lastError: { message: 'boom' } });
  });
});

describe('the wheel strategy', () => {
  it('get, counts and list find a waiting job in ready or in a bucket, with its due time', async () => {
    const keys = queueKeys(uniqueQueue('reads'));
    const layout: Layout = { kind: 'wheel', granularityMs: 1_000, clock: new ServerClock() };
    const now = await serverNow(client);
    const start = Math.floor((now + 60_000) / 1_000) * 1_000;
    const plain = (payload: string): Buffer => encodeRecord(NEW_JOB_HEADER, Buffer.from(payload));
    // As wheel.lua's wheel_place leaves them: due ids in ready (due stored negated), later ones in
    // their bucket, the index scoring each bucket by its end.
    await client
      .multi()
      .hset(keys.records, 'now', plain('n'), 'later', plain('l'))
      .rpush(keys.ready, 'now')
      .rpush(wheelBucketKey(keys, start), 'later')
      .zadd(keys.wheel, start + 1_000, String(start))
      .hset(keys.wheelCount, 'now', String(-(now - 5)), 'later', String(start + 10))
      .exec();

    expect(await getJob(client, keys, 'now', layout)).toMatchObject({ state: 'scheduled', score: now - 5 });
    expect(await getJob(client, keys, 'later', layout)).toMatchObject({
      state: 'scheduled',
      score: start + 10,
    });
    expect(await counts(client, keys, layout)).toMatchObject({
      scheduled: 2,
      due: 1,
      nextDue: expect.any(Number) as unknown,
    });
    const page = await listJobs(client, keys, 'scheduled', { offset: 0, limit: 10 }, layout);
    expect(page.map((j) => [j.id, j.score])).toEqual([
      ['now', now - 5],
      ['later', start + 10],
    ]);
    const second = await listJobs(client, keys, 'scheduled', { offset: 1, limit: 10 }, layout);
    expect(second.map((j) => j.id)).toEqual(['later']);
  });
});

describe('through a Queue', () => {
  it('reads back what add, cancel and reschedule wrote: states, priorities, order and counts', async () => {
    const queue = new Queue<{ n: number }>(uniqueQueue('reads'), { connection: redis.url() });
    try {
      await queue.add({ n: 1 }, { id: 'plain', delay: '1h' });
      await queue.add({ n: 2 }, { id: 'urgent', delay: '2h', priority: -7 });
      await queue.add({ n: 3 }, { id: 'due-low', priority: 9 });
      await queue.add({ n: 4 }, { id: 'gone', delay: '3h' });
      expect(await queue.cancel('gone')).toBe(true);

      expect(await queue.get('urgent')).toMatchObject({
        state: 'scheduled',
        priority: -7,
        payload: { n: 2 },
        attempts: 0,
        maxAttempts: 3,
      });
      expect(await queue.get('gone')).toMatchObject({ state: 'cancelled', payload: undefined });
      expect((await queue.list('scheduled')).map((j) => [j.id, j.priority])).toEqual([
        ['due-low', 9],
        ['plain', 0],
        ['urgent', -7],
      ]);
      expect((await queue.list('cancelled')).map((j) => j.id)).toEqual(['gone']);
      expect(await queue.counts()).toEqual({
        scheduled: 3,
        due: 1,
        held: 0,
        active: 0,
        dead: 0,
        completed: 0,
        cancelled: 1,
        waitingChildren: 0,
      });
      const before = (await queue.get('urgent'))!.runAt.getTime();
      expect(await queue.reschedule('urgent', { delay: '30m' })).toBe(true);
      const after = await queue.get('urgent');
      expect(after).toMatchObject({ state: 'scheduled', priority: -7 });
      expect(after!.runAt.getTime()).toBeLessThan(before);
      expect((await queue.list('scheduled')).map((j) => j.id)).toEqual(['due-low', 'urgent', 'plain']);
    } finally {
      await queue.close();
    }
  });
});

describe('completed jobs and their results', () => {
  it('get and list show a completed job, with the handler’s result when its worker keeps completed jobs', async () => {
    const name = uniqueQueue('reads');
    const queue = new Queue<{ n: number }>(name, { connection: redis.url() });
    await queue.add({ n: 21 }, { id: 'kept' });
    const kept = new Worker<{ n: number }>(name, async (job) => ({ doubled: job.payload.n * 2 }), {
      connection: redis.url(),
      keepCompleted: { count: 100 },
    });
    try {
      await waitFor(async () => (await queue.get('kept'))?.state === 'completed', { what: "'kept' done" });
      await kept.close();
      const plain = new Worker<{ n: number }>(name, async () => 'not kept', { connection: redis.url() });
      await queue.add({ n: 1 }, { id: 'plain' });
      await waitFor(async () => (await queue.get('plain'))?.state === 'completed', { what: "'plain' done" });
      await plain.close();

      const info = await queue.get('kept');
      expect(info).toMatchObject({ state: 'completed', result: { doubled: 42 }, payload: undefined });
      expect(info?.completedAt).toBeInstanceOf(Date);
      expect('result' in (await queue.get('plain'))!).toBe(false);
      expect((await queue.list('completed')).map((j) => j.id)).toEqual(['plain', 'kept']);
      expect(await queue.counts()).toMatchObject({ completed: 2, scheduled: 0, active: 0 });
    } finally {
      await kept.close();
      await queue.close();
    }
  });
});

/** The gq member of job `id` of group `group` due at `due`: "<group>\0<due: 6 bytes BE><id>". */
function groupMember(group: string, due: number, id: string): Buffer {
  const at = Buffer.alloc(6);
  at.writeUIntBE(due, 0, 6);
  return Buffer.concat([Buffer.from(`${group}\0`), at, Buffer.from(id)]);
}

describe('counts.lua with grouped jobs', () => {
  it('counts due grouped jobs, those their group holds, their heads in next due, and the histogram', async () => {
    const { keys, now } = await seed();
    await client
      .multi()
      // a: 3 due, 1 running of 2, in turn: 1 may start now, 2 are held.
      .zadd(keys.groupJobs, 0, groupMember('a', now - 2_000, 'a1'), 0, groupMember('a', now - 1, 'a2'))
      .zadd(keys.groupJobs, 0, groupMember('a', now - 1, 'a3'))
      .zadd(keys.groupsReady, 1, 'a')
      .hset(keys.groupCounts, 'a', '1')
      // b: at its bound (2 running), in neither gw nor gr: both due jobs held.
      .zadd(keys.groupJobs, 0, groupMember('b', now - 10, 'b1'), 0, groupMember('b', now - 5, 'b2'))
      .hset(keys.groupCounts, 'b', '2')
      // c: its one job due in 90 s, waiting in gw for it.
      .zadd(keys.groupJobs, 0, groupMember('c', now + 90_000, 'c1'))
      .zadd(keys.groupsWaiting, now + 90_000, 'c')
      // d: due, but waiting in gw for its rate limit's next token in 5 s: held. Its second job is
      // due within the first slice.
      .zadd(keys.groupJobs, 0, groupMember('d', now - 100, 'd1'), 0, groupMember('d', now + 20_000, 'd2'))
      .zadd(keys.groupsWaiting, now + 5_000, 'd')
      .exec();
    const got = await counts(client, keys, ZSET_LAYOUT, {
      groupConcurrency: 2,
      histogram: { sliceMs: 45_000, slices: 3 },
    });
    expect({ ...got, now: undefined }).toEqual({
      scheduled: 4 + 8,
      due: 2 + 3 + 2 + 1,
      held: 2 + 2 + 1,
      active: 1,
      dead: 1,
      completed: 2,
      cancelled: 1,
      waitingChildren: 0,
      paused: true,
      now: undefined,
      nextDue: now - 2_000, // a's head, earlier than w-due's now - 1 s
      histogram: {
        overdue: 2 + 3 + 2 + 1,
        // +20 s (d2) and +30 s (p-later); +60 s (w-later) and +90 s (c1); nothing in the third.
        counts: [2, 2, 0],
      },
    });
    // The same counts without the bound known: the groups in turn hold nothing beyond it.
    expect(await counts(client, keys, ZSET_LAYOUT, { groupConcurrency: 0 })).toMatchObject({
      due: 8,
      held: 2 + 1,
    });
  });
});

describe('counts.lua histogram of a group with many jobs coming', () => {
  it('counts them slice by slice, as reading them one by one would', async () => {
    const keys = queueKeys(uniqueQueue('reads'));
    const now = await serverNow(client);
    // 100 jobs of one group, due 1 s apart from +1 s: more than the script reads one by one.
    const members = Array.from({ length: 100 }, (_, i) => [
      0,
      groupMember('e', now + (i + 1) * 1_000, `e${i}`),
    ]);
    await client.zadd(keys.groupJobs, ...members.flat());
    await client.zadd(keys.groupsWaiting, now + 1_000, 'e');
    const got = await counts(client, keys, ZSET_LAYOUT, {
      groupConcurrency: 1,
      histogram: { sliceMs: 45_000, slices: 2 },
    });
    // +1..+45 s, then +46..+90 s; the script's now is a little after `now`, so +45 s may slip in
    // the first slice's end by a ms: the slices split 45/45 or 44/46.
    expect(got.histogram!.counts[0]! + got.histogram!.counts[1]!).toBe(90);
    expect(got.histogram!.counts[0]).toBeGreaterThanOrEqual(44);
    expect(got.histogram!.counts[0]).toBeLessThanOrEqual(45);
    expect(got).toMatchObject({ scheduled: 100, due: 0, held: 0, nextDue: now + 1_000 });
  });
});

describe('toInfo', () => {
  it('decodes the record: payload, attempts, priority, lease, result, and the final states', async () => {
    const { keys, now, claimedAt } = await seed();
    const info = async (id: string) => toInfo<string>(text, (await getJob(client, keys, id, ZSET_LAYOUT))!);

    expect(await info('p-due')).toMatchObject({
      state: 'scheduled',
      payload: 'pd',
      priority: 3,
      attempts: 0,
      maxAttempts: 3,
      runAt: new Date(now - 500),
      lease: null,
    });
    expect(await info('running')).toMatchObject({
      state: 'active',
      payload: 'run',
      attempts: 1,
      maxAttempts: 5,
      runAt: new Date(now - 110),
      lease: {
        workerId: 'worker|with|bars',
        startedAt: new Date(claimedAt),
        deadline: new Date(now + 15_000),
      },
      progress: { pct: 50 },
    });
    expect(await info('died')).toMatchObject({ state: 'dead', diedAt: new Date(now - 40), attempts: 3 });
    const done = await info('done-result');
    expect(done).toMatchObject({
      state: 'completed',
      payload: undefined,
      result: '42',
      completedAt: new Date(now - 20),
    });
    expect(done.decodeError).toBeUndefined();
    expect('result' in (await info('done-plain'))).toBe(false);
    expect(await info('gone')).toMatchObject({ state: 'cancelled', cancelledAt: new Date(now - 5) });
  });

  it('reports an unreadable record in decodeError instead of throwing', async () => {
    const { keys } = await seed();
    await client.hset(keys.records, 'w-due', Buffer.from([0x02, 0x00, 0x41]));
    const raw = await getJob(client, keys, 'w-due', ZSET_LAYOUT);
    expect(raw).toMatchObject({ state: 'scheduled' });
    const info = toInfo(text, raw!);
    expect(info.payload).toBeUndefined();
    expect(info.decodeError).toMatch(/format byte is 0x02/);
  });
});
