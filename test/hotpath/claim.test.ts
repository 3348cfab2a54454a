/**
 * claim.lua (ack + claim in one call) and extend.lua through their wrappers against a real
 * redis-server: the fast path and its ZPOPMIN variant, priorities, the pause gate, the rate limit,
 * acks and their refusals, burial of a missing or unreadable record, reap-on-claim, and the
 * fallback without ZMSCORE.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AckItem } from '../../src/operations/claim.js';
import { extend } from '../../src/operations/extend.js';
import { fileURLToPath } from 'node:url';
import { claimKeys } from '../../src/operations/claim.js';
import { decodeRecord, finalRecord, NEW_JOB_HEADER } from '../../src/record/index.js';
import { expandLua } from '../../src/redis/lua-source.js';
import {
  ackOf,
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

/** Commands the server has run so far, by name (INFO commandstats; scripts' own commands included). */
async function commandCalls(): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const m of (await f.client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls.set(m[1]!, Number(m[2]));
  }
  return calls;
}

/** The commands run between two commandCalls() readings (only those that ran). */
function diffCalls(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, n] of after) if (n > (before.get(name) ?? 0)) out.set(name, n - (before.get(name) ?? 0));
  return out;
}

async function serverNow(): Promise<number> {
  const [s, us] = await f.client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

describe('claim', () => {
  it('leases due jobs in due order: claim block written, member in a, gone from s', async () => {
    const keys = freshKeys('claim-basic');
    const now = await serverNow();
    await addJobs(f, keys, [
      job('b', { at: now - 5 }),
      job('a', { at: now - 10 }),
      job('later', { at: now + 60_000 }),
    ]);
    const out = await claimJobs(f, keys, 5, { holder: 7, leaseMs: 120_000 });
    expect(out.jobs.map((j) => [j.id, j.runAt])).toStrictEqual([
      ['a', now - 10],
      ['b', now - 5],
    ]);
    expect(out.nextAt).toBe(now + 60_000);
    expect(out.paused).toBe(false);
    const [a] = out.jobs;
    expect(a!.token).toBe(`1.${out.now}`);
    expect(a!.member).toBe(`1.${out.now}|a`);
    expect(a!.header).toMatchObject({
      attempts: 1,
      claims: 1,
      claimedAt: out.now,
      runDue: now - 10,
      holder: 7,
    });
    expect(a!.payload.toString()).toBe('{"n":"a"}');
    const stored = decodeRecord((await f.client.hgetBuffer(keys.records, 'a'))!);
    expect(stored.header).toStrictEqual(a!.header);
    expect(await f.client.zrange(keys.leases, 0, -1, 'WITHSCORES')).toStrictEqual([
      `1.${out.now}|a`,
      String(out.now + 120_000),
      `1.${out.now}|b`,
      String(out.now + 120_000),
    ]);
    expect(await f.client.zrange(keys.waiting, 0, -1)).toStrictEqual(['later']);
  });

  it('never takes a job before it is due; next_at is the head, or the earliest lease when not full', async () => {
    const keys = freshKeys('claim-early');
    const now = await serverNow();
    await addJobs(f, keys, [job('x', { at: now + 60_000 })]);
    const out = await claimJobs(f, keys, 3);
    expect(out.jobs).toStrictEqual([]);
    expect(out.nextAt).toBe(now + 60_000);
    await addJobs(f, keys, [job('y', { at: now - 1 })]);
    const taken = await claimJobs(f, keys, 3);
    expect(taken.jobs.map((j) => j.id)).toStrictEqual(['y']);
    // The lease of y ends before x is due: that is when to look next.
    expect(taken.nextAt).toBe(taken.now + 30_000);
  });

  it('a take of 16 or more reads its heads’ dues as runs of one due time: every job its own due, in due order', async () => {
    // claim-classes.lua: a due and how many share it (ZSCORE + ZCOUNT) cover a run of heads; a
    // short run, or few heads left, reads the rest with their scores. Runs of 12, 9, 1, 3 and 20
    // jobs (due times shared, then distinct), later jobs not due: every job keeps its own due.
    const keys = freshKeys('claim-runs');
    const now = await serverNow();
    const runs = [12, 9, 1, 3, 20];
    const jobs = runs.flatMap((size, r) =>
      Array.from({ length: size }, (_, i) =>
        job(`r${r}-${String(i).padStart(2, '0')}`, { at: now - 100 + r }),
      ),
    );
    await addJobs(f, keys, [...jobs, job('later', { at: now + 60_000 })]);
    const want = (taken: { jobs: { id: string; runAt: number }[] }) => taken.jobs.map((j) => [j.id, j.runAt]);
    const expected = jobs.map((j) => [j.id, (j.when as { at: number }).at]);
    // A take of 30: runs of 12 and 9, then a short run (1) reads the rest with scores; one more due
    // than taken, so look again now.
    const first = await claimJobs(f, keys, 30, { leaseMs: 120_000 });
    expect(want(first)).toStrictEqual(expected.slice(0, 30));
    expect(first.nextAt).toBe(first.now);
    // A take of 20 with 15 due: a run of 15 is all of them, and the next head (not due) is read apart.
    const second = await claimJobs(f, keys, 20, { leaseMs: 120_000 });
    expect(want(second)).toStrictEqual(expected.slice(30));
    expect(second.nextAt).toBe(now + 60_000);
    expect(await f.client.zrange(keys.waiting, 0, -1)).toStrictEqual(['later']);
    // Nothing due with a take of 16: the head is when to look again (the leases end later).
    const third = await claimJobs(f, keys, 16, { leaseMs: 120_000 });
    expect(third.jobs).toStrictEqual([]);
    expect(third.nextAt).toBe(now + 60_000);
  });

  it('reads each call its own settings, across more distinct ones than the settings memo keeps', async () => {
    // The function library remembers the numbers a setting's text means across calls (prelude.lua
    // SETTING_MEMO, emptied at 1,024 texts): 600 calls with a holder and a lease length of their
    // own (1,200 texts) each find their own, before and after the memo is emptied.
    const keys = freshKeys('claim-settings');
    await addJobs(
      f,
      keys,
      Array.from({ length: 600 }, (_, i) => job(`j${String(i).padStart(3, '0')}`)),
    );
    for (let i = 0; i < 600; i++) {
      const holder = 1000 + i;
      const leaseMs = 60_000 + i;
      const out = await claimJobs(f, keys, 1, { holder, leaseMs });
      expect(out.jobs).toHaveLength(1);
      const [taken] = out.jobs;
      expect(taken!.header.holder).toBe(holder);
      expect(taken!.deadline).toBe(out.now + leaseMs);
      expect(Number(await f.client.zscore(keys.leases, taken!.member))).toBe(out.now + leaseMs);
    }
  });

  it('with the zpopmin strategy at limit 1, a head not due is put back unchanged', async () => {
    const keys = freshKeys('claim-pop');
    const now = await serverNow();
    await addJobs(f, keys, [job('x', { at: now + 60_000 })]);
    const out = await claimJobs(f, keys, 1, { strategy: 'zpopmin' });
    expect(out.jobs).toStrictEqual([]);
    expect(out.nextAt).toBe(now + 60_000);
    expect(await f.client.zrange(keys.waiting, 0, -1, 'WITHSCORES')).toStrictEqual([
      'x',
      String(now + 60_000),
    ]);
    await addJobs(f, keys, [job('y', { at: now - 1 })]);
    const taken = await claimJobs(f, keys, 1, { strategy: 'zpopmin' });
    expect(taken.jobs.map((j) => j.id)).toStrictEqual(['y']);
    expect(await f.client.zrange(keys.waiting, 0, -1)).toStrictEqual(['x']);
  });

  it('takes due jobs lower priority first, equal priorities in due order, the default class as 0', async () => {
    const keys = freshKeys('claim-prio');
    const now = await serverNow();
    await addJobs(f, keys, [
      job('p5-old', { at: now - 30, header: { priority: 5 } }),
      job('d-old', { at: now - 40 }),
      job('m3', { at: now - 1, header: { priority: -3 } }),
      job('p5-new', { at: now - 20, header: { priority: 5 } }),
      job('d-new', { at: now - 10 }),
      job('m3-later', { at: now + 60_000, header: { priority: -3 } }),
    ]);
    const first = await claimJobs(f, keys, 3);
    expect(first.jobs.map((j) => j.id)).toStrictEqual(['m3', 'd-old', 'd-new']);
    expect(first.nextAt).toBe(first.now);
    const second = await claimJobs(f, keys, 3);
    expect(second.jobs.map((j) => j.id)).toStrictEqual(['p5-old', 'p5-new']);
    expect(second.jobs[0]!.header.priority).toBe(5);
    expect(await f.client.zrange(keys.prioWaiting, 0, -1)).toStrictEqual(['-3:m3-later']);
    expect(await f.client.exists(keys.prioReady, keys.waiting)).toBe(0);
  });

  it('promotes prioritized jobs from p to r once they are due', async () => {
    const keys = freshKeys('claim-promote');
    const now = await serverNow();
    await addJobs(f, keys, [
      job('soon', { at: now + 150, header: { priority: 2 } }),
      job('plain', { at: now + 100 }),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 250));
    const out = await claimJobs(f, keys, 5);
    expect(out.jobs.map((j) => j.id)).toStrictEqual(['plain', 'soon']);
  });

  it('more due prioritized jobs than one call promotes: still lower priority first, each call bounded', async () => {
    const keys = freshKeys('claim-promote-burst');
    const now = await serverNow();
    const due = now + 300;
    // 1,000 is what one call promotes from p to r: the urgent job falls due 1 ms after them and
    // so would be left in p by the first call.
    const many = Array.from({ length: 1_000 }, (_, i) =>
      job(`p5-${i}`, { at: due, header: { priority: 5 } }),
    );
    await addJobs(f, keys, [...many, job('urgent', { at: due + 1, header: { priority: -5 } })]);
    while ((await serverNow()) <= due + 1) await new Promise((resolve) => setTimeout(resolve, 10));
    const empty: string[] = [];
    let first: string | undefined;
    for (let call = 0; call < 5 && first === undefined; call++) {
      const out = await claimJobs(f, keys, 1);
      if (out.jobs.length === 0) {
        // A call that promoted its share and took nothing says to look again at once.
        expect(out.nextAt).toBeLessThanOrEqual(out.now);
        empty.push(`call ${call}`);
      } else first = out.jobs[0]!.id;
    }
    expect(first).toBe('urgent');
    expect(empty).toHaveLength(1);
    expect(await f.client.zcard(keys.prioWaiting)).toBe(0);
  });

  it('takes nothing while the queue is paused, but still applies the acks', async () => {
    const keys = freshKeys('claim-pause');
    await addJobs(f, keys, [job('a'), job('b')]);
    const [a] = (await claimJobs(f, keys, 1)).jobs;
    await f.client.set(keys.paused, '1');
    const out = await claimJobs(f, keys, 5, { acks: [ackOf(a!)] });
    expect(out).toMatchObject({ paused: true, nextAt: -1, jobs: [], acks: [{ status: 'ok' }] });
    expect(await f.client.zrange(keys.waiting, 0, -1)).toStrictEqual(['b']);
    await f.client.del(keys.paused);
    expect((await claimJobs(f, keys, 5)).jobs.map((j) => j.id)).toStrictEqual(['b']);
  });

  it('starts no more than the rate allows in a window, and says when the window reopens', async () => {
    const keys = freshKeys('claim-rate');
    await addJobs(
      f,
      keys,
      ['a', 'b', 'c'].map((id) => job(id)),
    );
    const rate = { max: 2, perMs: 60_000 };
    // Leases longer than the window, so the window, not a lease deadline, is when to look next.
    const first = await claimJobs(f, keys, 5, { rate, leaseMs: 120_000 });
    expect(first.jobs.map((j) => j.id)).toStrictEqual(['a', 'b']);
    expect(first.nextAt).toBe(first.now + 60_001);
    const second = await claimJobs(f, keys, 5, { rate, leaseMs: 120_000 });
    expect(second.jobs).toStrictEqual([]);
    expect(await f.client.zcard(keys.limiter)).toBe(2);
  });
});

describe('acks inside the claim', () => {
  it('completes the job: member gone, c scored, completed record, error and progress deleted', async () => {
    const keys = freshKeys('ack-ok');
    await addJobs(f, keys, [job('a'), job('b')]);
    const { jobs } = await claimJobs(f, keys, 2);
    const [a, b] = jobs;
    await f.client.hset(keys.errors, 'a', '{"message":"earlier"}');
    await f.client.hset(keys.progress, 'a', '50');
    const out = await claimJobs(f, keys, 0, {
      acks: [ackOf(a!, { hadError: true, progressed: true }), ackOf(b!, { result: Buffer.from('42') })],
    });
    expect(out.acks).toStrictEqual([{ status: 'ok' }, { status: 'ok' }]);
    expect(await f.client.exists(keys.leases, keys.errors, keys.progress)).toBe(0);
    expect(await f.client.zrange(keys.completed, 0, -1, 'WITHSCORES')).toStrictEqual([
      'a',
      String(out.now),
      'b',
      String(out.now),
    ]);
    // No final record was sent: the script makes it from the leased record, claim block kept.
    expect(await f.client.hgetBuffer(keys.records, 'a')).toStrictEqual(finalRecord(a!.header, 'completed'));
    expect(await f.client.hgetBuffer(keys.records, 'b')).toStrictEqual(
      finalRecord(b!.header, 'completed', Buffer.from('42')),
    );
  });

  it("an ack with the job's header (flag f) stores the completed record with its claim block and max attempts", async () => {
    const keys = freshKeys('ack-final');
    await addJobs(f, keys, [job('a', { header: { maxAttempts: 5 } }), job('b')]);
    const { jobs } = await claimJobs(f, keys, 2);
    const [a, b] = jobs;
    const out = await claimJobs(f, keys, 0, {
      acks: [ackOf(a!, { header: a!.header, result: Buffer.from('42') }), ackOf(b!, { header: b!.header })],
    });
    expect(out.acks).toStrictEqual([{ status: 'ok' }, { status: 'ok' }]);
    const storedA = (await f.client.hgetBuffer(keys.records, 'a'))!;
    expect(storedA).toStrictEqual(finalRecord(a!.header, 'completed', Buffer.from('42')));
    expect(decodeRecord(storedA).header).toMatchObject({
      completed: true,
      hasResult: true,
      attempts: 1,
      maxAttempts: 5,
      runDue: a!.runAt,
      claimedAt: a!.claimedAt,
    });
    expect(decodeRecord(storedA).payload.toString()).toBe('42');
    expect(decodeRecord((await f.client.hgetBuffer(keys.records, 'b'))!).header).toMatchObject({
      completed: true,
      hasResult: false,
      attempts: 1,
      maxAttempts: 3,
    });
  });

  it('a final record that is not a completed one refuses the whole call before any write', async () => {
    const keys = freshKeys('ack-bad-final');
    await addJobs(f, keys, [job('a'), job('b')]);
    const { jobs } = await claimJobs(f, keys, 2);
    const [a, b] = jobs;
    const claimLua = expandLua(fileURLToPath(new URL('../../src/scripts/', import.meta.url)), 'claim.lua');
    const settings = [0, 30_000, 1, 1, 0, 0, 0, 0, 1000, 0, 'm', EVENTS_FAILURES];
    const call = (bad: Buffer) =>
      f.client.callBuffer(
        'EVAL',
        claimLua,
        claimKeys(keys).length,
        ...claimKeys(keys),
        ...settings,
        2,
        a!.member,
        a!.deadline,
        'f',
        finalRecord(a!.header, 'completed'),
        b!.member,
        b!.deadline,
        'f',
        bad,
      );
    const before = await f.client.hgetallBuffer(keys.records);
    // A cancelled record, a live record, a truncated claim block: each refused, naming the ack.
    for (const bad of [
      finalRecord(b!.header, 'cancelled'),
      Buffer.concat([Buffer.from([0x01, 0x00]), Buffer.from('{}')]),
      finalRecord(b!.header, 'completed').subarray(0, 12),
    ]) {
      await expect(call(bad)).rejects.toThrow(/DELAYQ_BAD_ARG ack 2 of 2: final record/);
    }
    // Nothing written: ack 1 (valid) was not applied either.
    expect(await f.client.hgetallBuffer(keys.records)).toStrictEqual(before);
    expect(await f.client.zcard(keys.leases)).toBe(2);
    expect(await f.client.exists(keys.completed)).toBe(0);
  });

  it('a resent ack is ALREADY within its known deadline; a lost lease is refused with its reason', async () => {
    const keys = freshKeys('ack-refused');
    await addJobs(f, keys, [job('a'), job('c'), job('x')]);
    const { jobs } = await claimJobs(f, keys, 3);
    const [a, c, x] = jobs;
    await claimJobs(f, keys, 0, { acks: [ackOf(a!)] });
    // c: cancelled while it ran (what cancel.lua does to the lease and sets).
    await f.client.zrem(keys.leases, c!.member);
    await f.client.zadd(keys.cancelled, 1, 'c');
    // x: its deadline passed, not reaped yet (the worker knows the deadline it was told, now past:
    // a lease is never shortened, so an ack whose known deadline is ahead finds its lease valid).
    await f.client.zadd(keys.leases, 1, x!.member);
    const out = await claimJobs(f, keys, 0, {
      acks: [
        ackOf(a!),
        ackOf(c!),
        ackOf(x!, { knownDeadline: 1 }),
        { ...ackOf(a!), member: `9.1|a` },
        { ...ackOf(a!), knownDeadline: 1 },
      ],
    });
    expect(out.acks).toStrictEqual([
      { status: 'already' },
      { status: 'lost', detail: 'cancelled' },
      { status: 'lost', detail: 'expired' },
      { status: 'already' },
      { status: 'lost', detail: 'not held' },
    ]);
  });

  it('a member acked twice in one call is applied once, the second answered already, by ZREM or by a read', async () => {
    const keys = freshKeys('ack-twice');
    await addJobs(f, keys, [job('t1'), job('t2')]);
    const { jobs } = await claimJobs(f, keys, 2);
    const [t1, t2] = jobs;
    const out = await claimJobs(f, keys, 0, {
      // t1 by its own ZREM (known deadline ahead); t2 by a read of its score (known deadline past).
      acks: [ackOf(t1!), ackOf(t1!), ackOf(t2!, { knownDeadline: 1 }), ackOf(t2!, { knownDeadline: 1 })],
    });
    expect(out.acks).toStrictEqual([
      { status: 'ok' },
      { status: 'already' },
      { status: 'ok' },
      { status: 'already' },
    ]);
    expect(await f.client.zcard(keys.leases)).toBe(0);
    expect(await f.client.zcard(keys.completed)).toBe(2);
  });

  it('acks decided by their own ZREM (known deadline ahead) and by a read (known deadline past, lease extended) mix in one call', async () => {
    const keys = freshKeys('ack-mixed');
    await addJobs(f, keys, [job('m1'), job('m2'), job('m3')]);
    const { jobs } = await claimJobs(f, keys, 3);
    const [m1, m2, m3] = jobs;
    const out = await claimJobs(f, keys, 0, {
      // m2: the worker missed an extension (its known deadline is past), but the lease is valid.
      acks: [ackOf(m1!), ackOf(m2!, { knownDeadline: 1 }), ackOf(m3!)],
    });
    expect(out.acks).toStrictEqual([{ status: 'ok' }, { status: 'ok' }, { status: 'ok' }]);
    expect(await f.client.zcard(keys.leases)).toBe(0);
    expect((await f.client.zrange(keys.completed, 0, -1)).sort()).toStrictEqual(['m1', 'm2', 'm3']);
  });

  it('a claim of 16 jobs or more keeps the leases ZSET a skiplist, with nothing of its own left in it', async () => {
    const keys = freshKeys('ack-skiplist');
    const ids = Array.from({ length: 40 }, (_, i) => `j${i}`);
    await addJobs(
      f,
      keys,
      ids.map((id) => job(id)),
    );
    const small = await claimJobs(f, keys, 15);
    // 15 leases: Redis keeps them as a listpack, as it would without delayq.
    expect(await f.client.object('ENCODING', keys.leases)).toBe('listpack');
    const big = await claimJobs(f, keys, 16, { acks: small.jobs.map((j) => ackOf(j)) });
    expect(big.acks.every((a) => a.status === 'ok')).toBe(true);
    // The acks emptied the ZSET and the claim made it again: a skiplist from the start.
    expect(await f.client.object('ENCODING', keys.leases)).toBe('skiplist');
    expect((await f.client.zrange(keys.leases, 0, -1)).sort()).toStrictEqual(
      big.jobs.map((j) => j.member).sort(),
    );
    // Acks and the next claim on the skiplist: same outcomes, and it stays one.
    const rest = await claimJobs(f, keys, 20, { acks: big.jobs.slice(0, 10).map((j) => ackOf(j)) });
    expect(rest.acks).toHaveLength(10);
    expect(rest.acks.every((a) => a.status === 'ok')).toBe(true);
    expect(rest.jobs).toHaveLength(9);
    expect(await f.client.object('ENCODING', keys.leases)).toBe('skiplist');
    expect(await f.client.zcard(keys.leases)).toBe(6 + 9);
  });

  it('a single ack (concurrency 1): its ZREM alone decides while its known deadline is ahead; the same outcomes', async () => {
    const keys = freshKeys('ack-single');
    await addJobs(
      f,
      keys,
      ['a', 'b', 'c', 'd', 'e'].map((id) => job(id)),
    );
    const { jobs } = await claimJobs(f, keys, 5, { leaseMs: 60_000 });
    const [a, b, c, d, e] = jobs;
    const inside = async (acks: AckItem[]) => {
      const before = await commandCalls();
      const out = await claimJobs(f, keys, 0, { acks });
      return { out, calls: diffCalls(before, await commandCalls()) };
    };
    // Held, known deadline ahead: ZREM only (no ZMSCORE), then the completion.
    const ok = await inside([ackOf(a!)]);
    expect(ok.out.acks).toStrictEqual([{ status: 'ok' }]);
    expect(ok.calls.get('zmscore')).toBeUndefined();
    expect(ok.calls.get('zrem')).toBe(1);
    expect(await f.client.zscore(keys.leases, a!.member)).toBeNull();
    expect(await f.client.zscore(keys.completed, 'a')).toBe(String(ok.out.now));
    // Sent again (its reply lost): recognised within the deadline it was sent in.
    expect((await inside([ackOf(a!)])).out.acks).toStrictEqual([{ status: 'already' }]);
    // Cancelled while it ran, or reaped: the ZREM finds nothing, and the reason is read.
    await f.client.zrem(keys.leases, b!.member);
    await f.client.zadd(keys.cancelled, 1, 'b');
    expect((await inside([ackOf(b!)])).out.acks).toStrictEqual([{ status: 'lost', detail: 'cancelled' }]);
    await f.client.zrem(keys.leases, c!.member);
    expect((await inside([ackOf(c!)])).out.acks).toStrictEqual([{ status: 'lost', detail: 'not held' }]);
    // Expired as the worker was told (its known deadline passed, not reaped yet): read, refused,
    // and the lease stays for the reaper.
    await f.client.zadd(keys.leases, 1, d!.member);
    const expired = await inside([{ ...ackOf(d!), knownDeadline: 1 }]);
    expect(expired.out.acks).toStrictEqual([{ status: 'lost', detail: 'expired' }]);
    expect(expired.calls.get('zmscore')).toBe(1);
    expect(await f.client.zscore(keys.leases, d!.member)).toBe('1');
    // Extended by a renewal whose reply was lost: the worker's known deadline passed, the lease's
    // did not. Read, and applied.
    const now = await serverNow();
    await f.client.zadd(keys.leases, now + 60_000, e!.member);
    expect((await inside([{ ...ackOf(e!), knownDeadline: now - 1 }])).out.acks).toStrictEqual([
      { status: 'ok' },
    ]);
  });

  it("a batch's shared known deadline is read once, without scores: one ZRANGEBYSCORE, one ZREM, no ZREM per ack", async () => {
    const keys = freshKeys('ack-shared');
    const ids = ['s1', 's2', 's3', 's4', 's5'];
    await addJobs(
      f,
      keys,
      ids.map((id) => job(id)),
    );
    const { jobs } = await claimJobs(f, keys, 5);
    const before = await commandCalls();
    const out = await claimJobs(f, keys, 0, { acks: jobs.map((j) => ackOf(j)) });
    const calls = diffCalls(before, await commandCalls());
    expect(out.acks.every((a) => a.status === 'ok')).toBe(true);
    expect(calls.get('zrangebyscore')).toBe(1);
    expect(calls.get('zrem')).toBe(1);
    expect(calls.get('zmscore')).toBeUndefined();
    expect(await f.client.exists(keys.leases)).toBe(0);
    expect((await f.client.zrange(keys.completed, 0, -1)).sort()).toStrictEqual(ids);
  });

  it('at a shared deadline, a member moved or gone is read by score: extended applied, the rest refused', async () => {
    const keys = freshKeys('ack-shared-odd');
    await addJobs(
      f,
      keys,
      ['a', 'b', 'c', 'd', 'e'].map((id) => job(id)),
    );
    const { jobs } = await claimJobs(f, keys, 5);
    const [a, b, c, d, e] = jobs;
    // b: extended by a renewal whose reply was lost (its score is later than the worker knows);
    // c: cancelled while it ran; d: reaped and gone; e: expired, not reaped yet.
    await f.client.zadd(keys.leases, a!.deadline + 60_000, b!.member);
    await f.client.zrem(keys.leases, c!.member, d!.member);
    await f.client.zadd(keys.cancelled, 1, 'c');
    await f.client.zadd(keys.leases, 1, e!.member);
    const out = await claimJobs(f, keys, 0, {
      acks: [ackOf(a!), ackOf(b!), ackOf(c!), ackOf(d!), ackOf(e!), ackOf(a!)],
    });
    expect(out.acks).toStrictEqual([
      { status: 'ok' },
      { status: 'ok' },
      { status: 'lost', detail: 'cancelled' },
      { status: 'lost', detail: 'not held' },
      { status: 'lost', detail: 'expired' },
      { status: 'already' },
    ]);
    // Only e's lease is left, for the reaper; a and b completed once each.
    expect(await f.client.zrange(keys.leases, 0, -1)).toStrictEqual([e!.member]);
    expect((await f.client.zrange(keys.completed, 0, -1)).sort()).toStrictEqual(['a', 'b']);
  });

  it("past the members read at a shared deadline (other claims' leases of the same ms), acks are read by score", async () => {
    const keys = freshKeys('ack-shared-crowd');
    await addJobs(
      f,
      keys,
      ['p', 'q', 'r'].map((id) => job(id)),
    );
    const { jobs } = await claimJobs(f, keys, 3);
    // 100 leases of other claims at the same deadline, sorting before these (same score: by member).
    const deadline = jobs[0]!.deadline;
    await f.client.zadd(
      keys.leases,
      ...Array.from({ length: 100 }, (_, i) => [deadline, `0.1|other${i}`]).flat(),
    );
    const before = await commandCalls();
    const out = await claimJobs(f, keys, 0, { acks: jobs.map((j) => ackOf(j)) });
    const calls = diffCalls(before, await commandCalls());
    expect(out.acks.every((a) => a.status === 'ok')).toBe(true);
    expect(calls.get('zmscore')).toBe(1);
    expect(await f.client.zcard(keys.leases)).toBe(100);
    expect((await f.client.zrange(keys.completed, 0, -1)).sort()).toStrictEqual(['p', 'q', 'r']);
  });

  it('a resent ack of a job acked earlier in the same call (run again since) is ALREADY, as a call later', async () => {
    const keys = freshKeys('ack-same-call');
    await addJobs(f, keys, [job('m1')]);
    const [first] = (await claimJobs(f, keys, 1)).jobs;
    await claimJobs(f, keys, 0, { acks: [ackOf(first!)] });
    // Added again over the completed job (replace), and leased again.
    await addJobs(f, keys, [job('m1', { mode: 'replace' })]);
    const [second] = (await claimJobs(f, keys, 1)).jobs;
    expect(second!.member).not.toBe(first!.member);
    // The new lease's ack, then the first one resent: the job is completed by then.
    const out = await claimJobs(f, keys, 0, { acks: [ackOf(second!), ackOf(first!)] });
    expect(out.acks).toStrictEqual([{ status: 'ok' }, { status: 'already' }]);
    // The other order: the resent ack comes first, when the job is not completed yet.
    await addJobs(f, keys, [job('m1', { mode: 'replace' })]);
    const [third] = (await claimJobs(f, keys, 1)).jobs;
    const reversed = await claimJobs(f, keys, 0, { acks: [ackOf(second!), ackOf(third!)] });
    expect(reversed.acks).toStrictEqual([{ status: 'lost', detail: 'not held' }, { status: 'ok' }]);
  });

  it('gives the same outcomes without ZMSCORE (Redis before 6.2): the reads by score are a ZSCORE each', async () => {
    const keys = freshKeys('ack-nozm');
    await addJobs(f, keys, [job('a'), job('b'), job('c')]);
    const { jobs } = await claimJobs(f, keys, 3, { zmscore: false });
    const [a, b, c] = jobs;
    const before = await commandCalls();
    const out = await claimJobs(f, keys, 0, {
      zmscore: false,
      // b: its known deadline past (read by score, still valid); the last: a member never leased.
      acks: [ackOf(a!), ackOf(b!, { knownDeadline: 1 }), ackOf(c!), { ...ackOf(c!), member: '9.1|zz' }],
    });
    const calls = diffCalls(before, await commandCalls());
    expect(out.acks).toStrictEqual([
      { status: 'ok' },
      { status: 'ok' },
      { status: 'ok' },
      { status: 'lost', detail: 'not held' },
    ]);
    expect(calls.get('zmscore')).toBeUndefined();
    expect(calls.get('zscore')).toBeGreaterThanOrEqual(2);
    expect(await f.client.exists(keys.leases)).toBe(0);
  });

  it('refuses an ack whose member is not a lease member, before any write (the others not applied)', async () => {
    const keys = freshKeys('ack-bad-member');
    await addJobs(f, keys, [job('a'), job('b'), job('c')]);
    const { jobs } = await claimJobs(f, keys, 3);
    for (const acks of [
      [ackOf(jobs[0]!), { ...ackOf(jobs[1]!), member: 'nope|b' }],
      [...jobs.map((j) => ackOf(j)), { ...ackOf(jobs[0]!), member: 'r1' }],
    ]) {
      await expect(claimJobs(f, keys, 0, { acks })).rejects.toThrow(
        new RegExp(`ack ${acks.length} of ${acks.length}: member .* is not a lease member`),
      );
    }
    expect(await f.client.zcard(keys.leases)).toBe(3);
    expect(await f.client.exists(keys.completed)).toBe(0);
  });
});

describe('what a claim finds wrong', () => {
  it('buries a waiting id whose record is missing (MissingJob) or unreadable (BadRecord)', async () => {
    const keys = freshKeys('claim-bury');
    await addJobs(f, keys, [job('gone'), job('bad'), job('fine')]);
    await f.client.hdel(keys.records, 'gone');
    await f.client.hset(keys.records, 'bad', Buffer.from('0700', 'hex'));
    const out = await claimJobs(f, keys, 5);
    expect(out.jobs.map((j) => j.id)).toStrictEqual(['fine']);
    expect((await f.client.zrange(keys.dead, 0, -1)).sort()).toStrictEqual(['bad', 'gone']);
    expect(JSON.parse((await f.client.hget(keys.errors, 'gone'))!)).toMatchObject({ name: 'MissingJob' });
    expect(JSON.parse((await f.client.hget(keys.errors, 'bad'))!)).toMatchObject({ name: 'BadRecord' });
    expect(await f.client.hgetBuffer(keys.records, 'bad')).toStrictEqual(Buffer.from('0700', 'hex'));
    expect(await f.client.hget(keys.counters, 'dead')).toBe('2');
  });

  it('reaps an expired lease when the batch is not full, and takes the job again in the same call', async () => {
    const keys = freshKeys('claim-reap');
    await addJobs(f, keys, [job('a')]);
    const [a] = (await claimJobs(f, keys, 1)).jobs;
    await f.client.zadd(keys.leases, 1, a!.member);
    const out = await claimJobs(f, keys, 1);
    expect(out.jobs.map((j) => j.id)).toStrictEqual(['a']);
    expect(out.jobs[0]!.header).toMatchObject({ attempts: 2, claims: 2, hasError: true });
    expect(await f.client.zrange(keys.leases, 0, -1)).toStrictEqual([out.jobs[0]!.member]);
    expect(JSON.parse((await f.client.hget(keys.errors, 'a'))!)).toMatchObject({ name: 'LeaseExpired' });
    expect(await f.client.hget(keys.counters, 'reaped')).toBe('1');
  });
});

describe('extend', () => {
  it('pushes valid leases, never shortens one, and refuses lost ones', async () => {
    const keys = freshKeys('extend');
    await addJobs(f, keys, [job('a'), job('b'), job('c')]);
    const { jobs } = await claimJobs(f, keys, 3, { leaseMs: 10_000 });
    const [a, b, c] = jobs;
    await f.client.zadd(keys.leases, 1, c!.member);
    for (const zmscore of [true, false]) {
      // 9.9|nobody: a well-formed member that holds no lease.
      const out = await extend(
        f.client,
        keys,
        20_000,
        [a!.member, b!.member, c!.member, '9.9|nobody'],
        zmscore,
      );
      expect(out.deadlines).toStrictEqual([out.now + 20_000, out.now + 20_000, null, null]);
      expect(Number(await f.client.zscore(keys.leases, a!.member))).toBe(out.now + 20_000);
    }
    const shorter = await extend(f.client, keys, 1_000, [a!.member], true);
    expect(shorter.deadlines[0]).toBeGreaterThan(shorter.now + 1_000);
    // A value that is no lease member at all is a caller's mistake: refused, nothing extended.
    await expect(extend(f.client, keys, 20_000, [a!.member, 'x|y'], true)).rejects.toThrow(
      /ARGV\[4\] lease member x\|y is not a lease member/,
    );
  });
});

it('a new record decodes with the defaults', () => {
  expect(decodeRecord(job('x').record).header).toStrictEqual(NEW_JOB_HEADER);
});
