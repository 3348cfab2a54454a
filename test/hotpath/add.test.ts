/**
 * add.lua through its wrapper against a real redis-server: where each class of job is placed,
 * what an existing id answers in each state, the collision rule of generated ids, replace, and
 * malformed input refused before anything is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeRecord,
  encodeRecord,
  finalRecord,
  NEW_JOB_HEADER,
  COMPLETED_RECORD,
  CANCELLED_RECORD,
} from '../../src/record/index.js';
import { ScriptBadArg } from '../../src/redis/script-errors.js';
import { cancel } from '../../src/operations/cancel.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import {
  addJobs,
  claimJobs,
  EVENTS_FAILURES,
  freshKeys,
  job,
  startFixture,
  stopFixture,
  type Fixture,
} from './support.js';

let f: Fixture;
beforeAll(async () => {
  f = await startFixture();
});
afterAll(async () => {
  await stopFixture(f);
});

const TWO42 = 2 ** 42;

async function serverNow(): Promise<number> {
  const [s, us] = await f.client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

describe('add places each job by its class', () => {
  it('stores the record as sent and puts a default-class job in s at its due time', async () => {
    const keys = freshKeys('add-default');
    const sent = job('a', { delay: 60_000 });
    const before = await serverNow();
    const [out] = await addJobs(f, keys, [sent]);
    const after = await serverNow();
    expect(out).toMatchObject({ created: true });
    expect(out!.runAt).toBeGreaterThanOrEqual(before + 60_000 - 1_000);
    expect(out!.runAt).toBeLessThanOrEqual(after + 60_000);
    expect(await f.client.hgetBuffer(keys.records, 'a')).toStrictEqual(sent.record);
    expect(await f.client.zrange(keys.waiting, 0, -1, 'WITHSCORES')).toStrictEqual(['a', String(out!.runAt)]);
    expect(await f.client.hget(keys.counters, 'added')).toBe('1');
    expect(await f.client.exists(keys.prioWaiting, keys.prioReady, keys.events)).toBe(0);
  });

  it('puts a prioritized job in p until due, and in r (composite score) when already due', async () => {
    const keys = freshKeys('add-prio');
    const now = await serverNow();
    const [later, due] = await addJobs(f, keys, [
      job('later', { at: now + 60_000, header: { priority: -5 } }),
      job('due', { at: now - 10, header: { priority: 7 } }),
    ]);
    expect(later).toMatchObject({ created: true, runAt: now + 60_000 });
    expect(due).toMatchObject({ created: true, runAt: now - 10 });
    expect(await f.client.zrange(keys.prioWaiting, 0, -1, 'WITHSCORES')).toStrictEqual([
      '-5:later',
      String(now + 60_000),
    ]);
    expect(await f.client.zrange(keys.prioReady, 0, -1, 'WITHSCORES')).toStrictEqual([
      '7:due',
      String((7 + 1024) * TWO42 + now - 10),
    ]);
    expect(await f.client.exists(keys.waiting)).toBe(0);
  });

  it('writes routine events only when the events cap is positive (events: all)', async () => {
    const keys = freshKeys('add-events');
    await addJobs(f, keys, [job('quiet')]);
    expect(await f.client.exists(keys.events)).toBe(0);
    await addJobs(f, keys, [job('loud')], 1000);
    const events = await f.client.xrange(keys.events, '-', '+');
    expect(events.map(([, fields]) => fields.slice(0, 4))).toStrictEqual([['type', 'added', 'id', 'loud']]);
  });

  it('publishes a wake message only when the head moved earlier', async () => {
    const keys = freshKeys('add-wake');
    const sub = f.client.duplicate();
    const messages: string[] = [];
    await sub.subscribe(keys.wake);
    sub.on('message', (_channel, message: string) => messages.push(message));
    const now = await serverNow();
    await addJobs(f, keys, [job('x', { at: now + 50_000 })]);
    await addJobs(f, keys, [job('y', { at: now + 60_000 })]);
    await addJobs(f, keys, [job('z', { at: now + 40_000 })]);
    await f.client.publish(keys.wake, 'end');
    await waitFor(() => messages.includes('end'));
    sub.disconnect();
    expect(messages).toStrictEqual([String(now + 50_000), String(now + 40_000), 'end']);
  });
});

describe('an id that exists', () => {
  it('is kept (k, its due time), and a generated one that collides is taken (T)', async () => {
    const keys = freshKeys('add-exists');
    const now = await serverNow();
    const [first] = await addJobs(f, keys, [job('a', { at: now + 5_000 })]);
    const [again, other] = await addJobs(f, keys, [
      job('a', { at: now + 9_000 }),
      job('a', { at: now + 9_000, payload: '{"other":1}', mode: 'new' }),
    ]);
    expect(first).toMatchObject({ created: true, runAt: now + 5_000 });
    expect(again).toStrictEqual({ created: false, runAt: now + 5_000 });
    expect(other).toStrictEqual({ created: false, taken: true, runAt: -1 });
    expect(await f.client.hget(keys.counters, 'added')).toBe('1');
  });

  it('a generated id resent with the same record (a lost reply) is its own job, not a collision', async () => {
    const keys = freshKeys('add-resend');
    const sent = job('g', { mode: 'new', delay: 5_000 });
    const [first] = await addJobs(f, keys, [sent]);
    const [resent] = await addJobs(f, keys, [sent]);
    expect(resent).toStrictEqual({ created: false, runAt: first!.runAt });
  });

  it('answers the state of a running, completed, cancelled or dead job, and writes nothing (a replace of a completed job excepted)', async () => {
    const keys = freshKeys('add-states');
    await addJobs(f, keys, [job('run'), job('done')]);
    const claimed = await claimJobs(f, keys, 2);
    const done = claimed.jobs.find((j) => j.id === 'done')!;
    const running = claimed.jobs.find((j) => j.id === 'run')!;
    await claimJobs(f, keys, 0, {
      acks: [{ member: done.member, knownDeadline: done.deadline, hadError: false, progressed: false }],
    });
    await f.client.hset(keys.records, 'gone', CANCELLED_RECORD);
    await f.client.zadd(keys.cancelled, 111, 'gone');
    await f.client.hset(keys.records, 'died', encodeRecord(NEW_JOB_HEADER, Buffer.from('{}')));
    await f.client.zadd(keys.dead, 222, 'died');
    const outs = await addJobs(
      f,
      keys,
      ['run', 'gone', 'died'].map((id) => job(id, { mode: 'replace' })),
    );
    const completedAt = Number(await f.client.zscore(keys.completed, 'done'));
    const [kept] = await addJobs(f, keys, [job('done')]);
    expect(outs).toStrictEqual([
      { created: false, replaced: false, state: 'active', runAt: running.deadline },
      { created: false, replaced: false, state: 'cancelled', runAt: 111 },
      { created: false, replaced: false, state: 'dead', runAt: 222 },
    ]);
    expect(kept).toStrictEqual({ created: false, state: 'completed', runAt: completedAt, completedAt });
    expect(await f.client.hgetBuffer(keys.records, 'done')).toStrictEqual(
      finalRecord(done.header, 'completed'),
    );
    expect(await f.client.exists(keys.waiting)).toBe(0);
    expect(await f.client.hget(keys.counters, 'added')).toBe('2');
  });

  it('a replace of a completed job adds it again as a new job: created, out of c, counted as added', async () => {
    const keys = freshKeys('add-reborn');
    await addJobs(f, keys, [job('done', { payload: '{"rev":1}' })]);
    const [done] = (await claimJobs(f, keys, 1)).jobs;
    await claimJobs(f, keys, 0, {
      acks: [{ member: done!.member, knownDeadline: done!.deadline, hadError: false, progressed: false }],
    });
    expect(await f.client.zcard(keys.completed)).toBe(1);
    const now = await serverNow();
    const [again] = await addJobs(f, keys, [
      job('done', { payload: '{"rev":2}', at: now + 5_000, mode: 'replace' }),
    ]);
    expect(again).toMatchObject({ created: true, runAt: now + 5_000 });
    expect(await f.client.zcard(keys.completed)).toBe(0);
    expect(await f.client.zrange(keys.waiting, 0, -1, 'WITHSCORES')).toEqual(['done', String(now + 5_000)]);
    const { header, payload } = decodeRecord((await f.client.hgetBuffer(keys.records, 'done'))!);
    // A new job but for its claim count, which goes on from the old job's (its completed record
    // kept the claim block, though the ack sent no final record): no lease token repeats.
    expect(header).toStrictEqual({ ...NEW_JOB_HEADER, claims: done!.header.claims });
    expect(payload.toString()).toBe('{"rev":2}');
    expect(await f.client.hget(keys.counters, 'added')).toBe('2');
  });

  it('a replace of a completed record without claim block (delayq 0.2 wrote it) starts its claims half-way round', async () => {
    const keys = freshKeys('add-reborn-old');
    await f.client.hset(keys.records, 'old', COMPLETED_RECORD);
    await f.client.zadd(keys.completed, 1_000, 'old');
    const now = await serverNow();
    const [again] = await addJobs(f, keys, [job('old', { at: now + 5_000, mode: 'replace' })]);
    expect(again).toMatchObject({ created: true, runAt: now + 5_000 });
    const { header } = decodeRecord((await f.client.hgetBuffer(keys.records, 'old'))!);
    // The old count is unknown: 2^15 is past any count an old job reaches, so no token repeats.
    expect(header).toStrictEqual({ ...NEW_JOB_HEADER, claims: 32768 });
  });

  it('an id twice in one call: a replace finds the job the call wrote before it, and the jobs after it are placed', async () => {
    const keys = freshKeys('add-twice');
    const now = await serverNow();
    const grouped = { group: 'g1', groupDue: 0 };
    const outs = await addJobs(f, keys, [
      job('a', { at: now + 60_000, header: grouped, payload: '{"v":1}' }),
      job('b', { at: now + 50_000 }),
      job('a', { at: now + 30_000, header: grouped, payload: '{"v":2}', mode: 'replace' }),
      job('a', { at: now + 10_000, header: grouped, payload: '{"v":3}' }),
      job('c', { at: now + 40_000 }),
      job('c', { at: now + 20_000, mode: 'replace' }),
    ]);
    expect(outs).toStrictEqual([
      { created: true, runAt: now + 60_000 },
      { created: true, runAt: now + 50_000 },
      { created: false, replaced: true, runAt: now + 30_000 },
      { created: false, runAt: now + 30_000 },
      { created: true, runAt: now + 40_000 },
      { created: false, replaced: true, runAt: now + 20_000 },
    ]);
    const a = decodeRecord((await f.client.hgetBuffer(keys.records, 'a'))!);
    expect(a.header).toStrictEqual({ ...NEW_JOB_HEADER, ...grouped, groupDue: now + 30_000 });
    expect(a.payload.toString()).toBe('{"v":2}');
    expect(await f.client.zcard(keys.groupJobs)).toBe(1);
    expect(await f.client.zrange(keys.groupBacklog, 0, -1, 'WITHSCORES')).toStrictEqual(['g1', '1']);
    expect(await f.client.zrange(keys.groupsWaiting, 0, -1, 'WITHSCORES')).toStrictEqual([
      'g1',
      String(now + 30_000),
    ]);
    expect(await f.client.zrange(keys.waiting, 0, -1, 'WITHSCORES')).toStrictEqual([
      'c',
      String(now + 20_000),
      'b',
      String(now + 50_000),
    ]);
    expect(await f.client.hget(keys.counters, 'added')).toBe('3');
  });

  it('replace of a grouped job that ran before: the record keeps its attempts and names the due time it waits under', async () => {
    const keys = freshKeys('add-replace-group');
    const now = await serverNow();
    const grouped = { group: 'g1', groupDue: 0 };
    await addJobs(f, keys, [job('r', { at: now + 60_000, header: grouped })]);
    // It ran once and was put back (a retry): its record now has a claim block.
    const put = decodeRecord((await f.client.hgetBuffer(keys.records, 'r'))!);
    const ran = { ...put.header, attempts: 1, claims: 1, claimedAt: now - 100, runDue: now - 200, holder: 3 };
    await f.client.hset(keys.records, 'r', encodeRecord(ran, put.payload));
    const [out] = await addJobs(f, keys, [
      job('r', { at: now + 30_000, header: grouped, payload: '{"new":1}', mode: 'replace' }),
    ]);
    expect(out).toStrictEqual({ created: false, replaced: true, runAt: now + 30_000 });
    const stored = decodeRecord((await f.client.hgetBuffer(keys.records, 'r'))!);
    expect(stored.header).toStrictEqual({ ...ran, groupDue: now + 30_000 });
    expect(await f.client.zrange(keys.groupsWaiting, 0, -1, 'WITHSCORES')).toStrictEqual([
      'g1',
      String(now + 30_000),
    ]);
    // A cancel finds the job in gq by the due time its record names: nothing is left behind.
    expect(await cancel(f.client, keys, { id: 'r', eventsCap: EVENTS_FAILURES, layout: ZSET_LAYOUT })).toBe(
      'waiting',
    );
    expect(await f.client.exists(keys.groupJobs, keys.groupBacklog, keys.groupsWaiting)).toBe(0);
  });

  it('replace moves a waiting job to its new class and due time, keeping attempts and the error flag', async () => {
    const keys = freshKeys('add-replace');
    const now = await serverNow();
    // A job that ran once and failed: claim block with 1 attempt, E flag, due again later.
    const ran = {
      ...NEW_JOB_HEADER,
      attempts: 1,
      claims: 1,
      claimedAt: now - 100,
      runDue: now - 200,
      holder: 3,
      hasError: true,
    };
    await f.client.hset(keys.records, 'r', encodeRecord(ran, Buffer.from('{"old":1}')));
    await f.client.zadd(keys.waiting, now + 60_000, 'r');
    const [out] = await addJobs(f, keys, [
      job('r', {
        at: now + 30_000,
        header: { priority: 4, maxAttempts: 9 },
        payload: '{"new":1}',
        mode: 'replace',
      }),
    ]);
    expect(out).toStrictEqual({ created: false, replaced: true, runAt: now + 30_000 });
    const stored = decodeRecord((await f.client.hgetBuffer(keys.records, 'r'))!);
    expect(stored.header).toStrictEqual({ ...ran, priority: 4, maxAttempts: 9 });
    expect(stored.payload.toString()).toBe('{"new":1}');
    expect(await f.client.exists(keys.waiting)).toBe(0);
    expect(await f.client.zrange(keys.prioWaiting, 0, -1, 'WITHSCORES')).toStrictEqual([
      '4:r',
      String(now + 30_000),
    ]);
  });
});

// The wrapper sends the packed form, which has no class (the script reads it from the header): a
// class that disagrees with the header is refused in the per-job form, in foreign-producer.test.ts.
describe('malformed input is refused before anything is written', () => {
  it.each([
    ['a record that is not a new job', { ...job('x'), record: COMPLETED_RECORD }, /not a new job/],
    [
      'an unreadable record',
      { ...job('x'), record: Buffer.from('0200', 'hex') },
      /record format byte 2 is unknown/,
    ],
    ['an id with a control character', { ...job('x'), id: 'a\nb' }, /control character/],
  ])('%s', async (_what, bad, message) => {
    const keys = freshKeys('add-bad');
    const error = await addJobs(f, keys, [job('fine'), bad]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ScriptBadArg);
    expect((error as Error).message).toMatch(/job 2 of 2/);
    expect((error as Error).message).toMatch(message);
    expect(await f.client.exists(keys.records, keys.waiting, keys.counters)).toBe(0);
  });

  // The script looks for control characters in all of a call's ids at once (one search per
  // control character): the job it names must still be the first bad one, whatever its problem.
  it('names the job whose id holds a control character, after any earlier bad job', async () => {
    const keys = freshKeys('add-control');
    const refusal = async (jobs: Parameters<typeof addJobs>[2]) =>
      ((await addJobs(f, keys, jobs).catch((e: unknown) => e)) as Error).message;
    for (const byte of [0x00, 0x01, 0x09, 0x1f, 0x7f]) {
      const bad = `id-${String.fromCharCode(byte)}-x`;
      expect(await refusal([job('a'), job('b'), job(bad), job('c')]), `byte ${byte}`).toMatch(
        /job 3 of 4: id contains a control character/,
      );
    }
    // An earlier job's other problem comes first; a later one's does not.
    expect(await refusal([job('a'), { ...job('b'), record: COMPLETED_RECORD }, job('c\x7f')])).toMatch(
      /job 2 of 3: record is not a new job/,
    );
    expect(await refusal([job('a\x01'), { ...job('b'), record: COMPLETED_RECORD }])).toMatch(
      /job 1 of 2: id contains a control character/,
    );
    expect(await f.client.exists(keys.records, keys.waiting, keys.counters)).toBe(0);
    // Bytes of 128 and above are not control characters: UTF-8 ids (U+0080 is bytes C2 80) are fine.
    const outs = await addJobs(f, keys, [job('ünï-cödé'), job('\u0080'), job('plain ~ id')]);
    expect(outs.map((o) => o.created)).toStrictEqual([true, true, true]);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
