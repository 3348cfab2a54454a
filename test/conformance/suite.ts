/**
 * The behaviour every claim strategy must show, run once per strategy against a real redis-server
 * (see the *.test.ts files beside this one).
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  CancelledError,
  Queue,
  Worker,
  type Job,
  type WorkerOptions,
  LeaseLostError,
  ValidationError,
} from '../../src/index.js';
import { Cluster, type Redis } from 'ioredis';
import type { Strategy } from '../../src/redis/capabilities.js';
import type { ConnectionOption } from '../../src/redis/connection.js';
import { queueKeys, wheelBucketKey } from '../../src/redis/keys.js';
import { ServerClock } from '../../src/clock.js';
import { bucketStart, ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { ack, ackOnly, type AckItem, type AckSettings } from '../../src/operations/ack.js';
import { claim, type ClaimedJob, type ClaimInput } from '../../src/operations/claim.js';
import { extend } from '../../src/operations/extend.js';
import { fail } from '../../src/operations/fail.js';
import { reap } from '../../src/operations/reap.js';
import { ScriptLeaseLost } from '../../src/redis/script-errors.js';
import { script } from '../../src/redis/scripts.js';
import { jsonCodec } from '../../src/codec/json.js';
import { CANCELLED_RECORD, encodeRecord, NEW_JOB_HEADER } from '../../src/record/index.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { connectionsBefore, waitForSleepingWorker } from '../support/idle-worker.js';
import type { RedisServerOptions } from '../support/redis-server.js';
import { neverEarlyTests } from './never-early.js';

// The direct script calls below use the waiting sets whatever the strategy: the wheel's claim
// takes from them too (retries written by a producer that does not know the wheel).
const ZSET = ZSET_LAYOUT;

/** Roles that are bookkeeping of the queue, not of its jobs: left out of footprints. */
const NOT_JOBS = new Set(['config', 'counters', 'holders']);

/** Where the suite runs instead of on a redis-server of its own (e.g. a Redis Cluster the caller starts). */
export interface ConformanceTarget {
  /** What Queue and Worker get as `connection`; called in each test. */
  connection(): ConnectionOption;
  /** A fresh client to seed and inspect Redis with; the suite closes it with quit(). */
  inspector(): Redis | Cluster;
  /** Named in the describe title, e.g. 'cluster'. */
  label?: string;
}

/** How precise the strategy's timing is, and its wheel settings. */
export interface SuiteOptions {
  /**
   * Worst lateness the strategy allows by design on an idle machine, on top of the worker's own
   * reaction time: 0 for zpopmin and range (they start a job at its due time), the granularity for
   * the wheel (a bucket is promoted when its end has passed). Timing expectations add it.
   */
  precisionMs?: number;
  /** Strategy 'wheel': the bucket width every Queue and Worker of the suite uses. */
  granularityMs?: number;
}

/** A redis-server for this file, started with `server` options (the default target). */
function ownServer(server: RedisServerOptions): ConformanceTarget {
  const redis = useRedis(server);
  return { connection: () => redis.url(), inspector: () => inspector(redis.url()) };
}

/**
 * Register the conformance tests for `strategy` on a server started with `server` options, or on
 * `target` when given (then `server` is unused and the caller starts and stops what it runs on).
 */
export function conformanceSuite(
  strategy: Strategy,
  server: RedisServerOptions = {},
  target?: ConformanceTarget,
  suiteOptions: SuiteOptions = {},
): void {
  const at = target ?? ownServer(server);
  const closers: Array<() => Promise<void>> = [];
  const precisionMs = suiteOptions.precisionMs ?? 0;
  const granularityMs = suiteOptions.granularityMs ?? 1_000;
  const wheelOptions = strategy === 'wheel' ? { wheel: { granularityMs } } : {};
  const layout = () =>
    strategy === 'wheel'
      ? { kind: 'wheel' as const, granularityMs, clock: new ServerClock() }
      : { kind: 'zset' as const };

  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
  });

  function setup<T = unknown>(): { queue: Queue<T>; name: string } {
    const name = uniqueQueue(strategy);
    const queue = new Queue<T>(name, { connection: at.connection(), strategy, ...wheelOptions });
    closers.push(() => queue.close());
    return { queue, name };
  }

  function worker<T>(
    name: string,
    handler: (job: Job<T>) => Promise<unknown>,
    options: WorkerOptions<T> = {},
  ): Worker<T> {
    const w = new Worker<T>(name, handler, {
      connection: at.connection(),
      strategy,
      ...wheelOptions,
      ...options,
    });
    closers.push(() => w.close({ timeoutMs: 2_000 }));
    return w;
  }

  /** Wait (bounded) until the server's clock has reached `ms`: a lease deadline or a due time. */
  async function untilServerTime(r: Redis | Cluster, ms: number): Promise<void> {
    await waitFor(async () => (await serverNow(r)) >= ms, { what: `server time ${ms}` });
  }

  /**
   * What the queue holds for its jobs, per key role (the config record, counters and worker
   * registry are left out). A finished job leaves its final record in `records` and its id in
   * `completed`, `cancelled` or `dead` while retention keeps it.
   */
  async function footprint(name: string): Promise<Record<string, number>> {
    const r = at.inspector();
    const keys = queueKeys(name);
    const out: Record<string, number> = {};
    for (const [role, key] of Object.entries(keys)) {
      if (NOT_JOBS.has(role)) continue;
      const type = await r.type(key);
      if (type === 'zset') out[role] = await r.zcard(key);
      else if (type === 'hash') out[role] = await r.hlen(key);
      else if (type === 'list') out[role] = await r.llen(key);
    }
    if (strategy === 'wheel') {
      // Bucket lists are named by their start, so they are found by pattern, on every master of a
      // Cluster (KEYS on a Cluster client would ask one node only).
      const nodes = r instanceof Cluster ? r.nodes('master') : [r];
      for (const node of nodes) {
        for (const key of await node.keys(`${wheelBucketKey(keys, 0).slice(0, -1)}*`)) {
          out[`bucket ${key}`] = await node.llen(key);
        }
      }
    }
    await r.quit();
    return out;
  }

  /**
   * Write a waiting job straight into Redis, as a producer that publishes no wake-up would: its
   * record (a new job's header with `maxAttempts`, then `payload` bytes) into the records hash, and
   * its id into the default class's waiting set, or the wheel (ready when due, else its bucket).
   */
  async function seedWaiting(
    r: Redis | Cluster,
    name: string,
    job: { id: string; payload: Buffer; maxAttempts: number; due: number },
  ): Promise<void> {
    const keys = queueKeys(name);
    await r.hset(
      keys.records,
      job.id,
      encodeRecord({ ...NEW_JOB_HEADER, maxAttempts: job.maxAttempts }, job.payload),
    );
    if (strategy !== 'wheel') {
      await r.zadd(keys.waiting, job.due, job.id);
      return;
    }
    // The wheel keeps each waiting job's due time in wc (negative for one put straight into ready).
    if (job.due <= (await serverNow(r))) {
      await r.rpush(keys.ready, job.id);
      await r.hset(keys.wheelCount, job.id, String(-job.due));
      return;
    }
    const start = bucketStart(job.due, granularityMs);
    await r.rpush(wheelBucketKey(keys, start), job.id);
    await r.zadd(keys.wheel, start + granularityMs, String(start));
    await r.hset(keys.wheelCount, job.id, String(job.due));
  }

  /**
   * Script calls and blocking waits the server has served so far, over every master: a worker
   * that polls or spins shows here (the inspector's own TIME and INFO are not counted).
   */
  async function callsSoFar(r: Redis | Cluster): Promise<number> {
    const nodes = r instanceof Cluster ? r.nodes('master') : [r];
    let total = 0;
    for (const node of nodes) {
      const info = await node.info('commandstats');
      for (const m of info.matchAll(/^cmdstat_(evalsha|eval|fcall|blmove|brpoplpush):calls=(\d+)/gm))
        total += Number(m[2]);
    }
    return total;
  }

  /** A direct claim of up to 10 jobs as holder `holder`, with routine events on (a positive cap). */
  const claimInput = (leaseMs: number, holder = 1): ClaimInput => ({
    strategy,
    limit: 10,
    leaseMs,
    holder,
    deadMaxCount: 1_000,
    deadMaxAgeMs: 0,
    rate: { max: 0, perMs: 0 },
    eventsCap: 1_000,
    zmscore: true,
    layout: layout(),
  });
  /** What a direct ack sends besides the acks (as a worker's claim of none). */
  const ackSettings = (): AckSettings => {
    const settings: Partial<ClaimInput> = claimInput(10_000);
    delete settings.limit;
    return settings as AckSettings;
  };
  /** The ack a worker sends for `job`. */
  const ackOf = (job: ClaimedJob): AckItem => ({
    member: job.member,
    knownDeadline: job.deadline,
    hadError: job.header.hasError,
    progressed: false,
  });
  /** Counts with nothing held (no groups here), any completed or cancelled, plus `rest`. */
  const countsOf = (rest: { scheduled: number; due: number; active: number; dead: number }) => ({
    held: 0,
    ...rest,
    completed: expect.any(Number) as number,
    cancelled: expect.any(Number) as number,
    waitingChildren: 0,
  });

  describe(`conformance: ${strategy}${at.label === undefined ? '' : ` on ${at.label}`}`, () => {
    it('uses the requested strategy', async () => {
      const { name } = setup();
      const w = worker(name, async () => {});
      await w.waitUntilReady();
      expect(w.strategy).toBe(strategy);
    });

    it('runs jobs in due order, never before their due time by the Redis clock', async () => {
      const { queue, name } = setup<number>();
      const runs: Array<{ n: number; runAt: number; claimedAt: number }> = [];
      // Added in reverse due order: only the schedule's ordering can put them right. Absolute due
      // times, so a slow add on a loaded machine cannot reorder them. The queue is ready first (a
      // first call connects, probes and records the definition: 300 ms on a loaded machine, when
      // this test runs alone), so no job is already due when it is added: the wheel would push it
      // straight to ready, in add order.
      await queue.counts();
      const r = at.inspector();
      const base = (await serverNow(r)) + 300;
      await r.quit();
      for (let n = 9; n >= 0; n--) await queue.add(n, { runAt: base + n * 30 });
      const w = worker<number>(name, async (job) => {
        runs.push({ n: job.payload, runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime() });
      });
      await waitFor(() => runs.length === 10, { what: '10 runs', timeoutMs: 10_000 + precisionMs });
      expect(runs.map((r) => r.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      for (const run of runs) expect(run.claimedAt).toBeGreaterThanOrEqual(run.runAt);
      await w.close();
    });

    neverEarlyTests(strategy, at, {
      precisionMs,
      granularityMs,
      closeAfter: (close) => void closers.push(async () => void (await close())),
    });

    it('leaves only its completed record after a job completes', async () => {
      const { queue, name } = setup<string>();
      const done: string[] = [];
      const w = worker<string>(name, async (job) => job.payload.toUpperCase());
      w.on('completed', (job, result) => done.push(`${job.id}=${String(result)}`));
      const { id } = await queue.add('hi');
      await waitFor(() => done.length === 1);
      expect(done).toEqual([`${id}=HI`]);
      // Only the completed record and its entry, kept a while so a resent add cannot run it again.
      expect(await footprint(name)).toEqual({ records: 1, completed: 1 });
      expect((await queue.get(id))?.state).toBe('completed');
    });

    it('an add of a job that already ran writes nothing and says when it completed, until the id is forgotten', async () => {
      const { queue, name } = setup<string>();
      const ran: string[] = [];
      worker<string>(name, async (job) => void ran.push(job.payload), { rememberCompleted: { count: 2 } });
      // What ioredis does after a dropped connection took the reply: the same add again.
      const first = await queue.add('once', { id: 'resent' });
      await waitFor(() => ran.length === 1, { what: 'the first run' });
      const again = await queue.add('twice?', { id: 'resent' });
      expect(again.created).toBe(false);
      expect(again.completedAt).toBeInstanceOf(Date);
      expect(again.completedAt!.getTime()).toBeGreaterThanOrEqual(first.runAt.getTime());
      expect(again.runAt).toEqual(again.completedAt);
      // Two later completions push it out of a memory of 2 ids (the trim duty, about once a
      // second): the id is free again.
      await queue.addBulk(['a', 'b'].map((payload) => ({ payload, opts: { id: payload } })));
      await waitFor(() => ran.length === 3, { what: 'two more runs' });
      await waitFor(async () => (await queue.get('resent')) === null, { what: 'the trim to forget it' });
      expect((await queue.add('again', { id: 'resent' })).created).toBe(true);
      await waitFor(() => ran.length === 4, { what: 'the re-added job' });
      expect(ran[0]).toBe('once');
      expect(ran.slice(1, 3).sort()).toEqual(['a', 'b']);
      expect(ran[3]).toBe('again');
      await waitFor(async () => (await footprint(name))['completed'] === 2, { what: 'the trim to 2' });
      expect(await footprint(name)).toEqual({ records: 2, completed: 2 });
    });

    it('an idle worker is woken by an earlier job instead of sleeping to its timer', async () => {
      const { queue, name } = setup<string>();
      await queue.add('far', { delay: '1h' });
      const look = at.inspector();
      const before = await connectionsBefore(look);
      const ran: Array<{ runAt: number; claimedAt: number }> = [];
      const w = worker<string>(
        name,
        async (job) => void ran.push({ runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime() }),
        {
          maxSleepMs: 3_600_000,
        },
      );
      await w.waitUntilReady();
      // Asleep until the far job: its claim was answered before 'soon' exists.
      await waitForSleepingWorker(look, before, { blocking: strategy === 'wheel' });
      await look.quit();
      await queue.add('soon', { delay: 200 });
      await waitFor(() => ran.length === 1, { timeoutMs: 3_000 + precisionMs, what: 'the woken run' });
      const [run] = ran;
      expect(run!.claimedAt).toBeGreaterThanOrEqual(run!.runAt);
      // With a 1 h timer, only the wake-up can explain a start this close to the due time.
      expect(run!.claimedAt - run!.runAt).toBeLessThan(1_000 + precisionMs);
    });

    it('a lost wake-up delays a job by at most the safety timer, never strands it', async () => {
      const { name } = setup();
      const r = at.inspector();
      const before = await connectionsBefore(r);
      const ran: string[] = [];
      const w = worker(name, async (job) => void ran.push(job.id), { maxSleepMs: 300 });
      await w.waitUntilReady();
      // Its first claim answered. (Not waiting for the wheel's blocked BLMOVE: with a 300 ms timer
      // it is there only between wake-ups, and on a Cluster each wait opens a new connection.)
      await waitForSleepingWorker(r, before);
      // A producer that writes the job without publishing the wake-up (as a lost message looks).
      const now = await serverNow(r);
      // Due a moment from now: in the wheel it goes to a bucket the sleeping worker knows nothing of.
      await seedWaiting(r, name, {
        id: 'silent',
        payload: jsonCodec.encodePayload(1),
        maxAttempts: 1,
        due: now + 20,
      });
      await r.quit();
      await waitFor(() => ran.includes('silent'), {
        timeoutMs: 2_000 + precisionMs,
        what: 'the un-announced job',
      });
    });

    it('never runs more than `concurrency` handlers at once', async () => {
      const { queue, name } = setup();
      let running = 0;
      let peak = 0;
      let done = 0;
      worker(
        name,
        async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 20));
          running--;
          done++;
        },
        { concurrency: 3 },
      );
      await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ payload: i })));
      await waitFor(() => done === 30, { what: '30 jobs' });
      expect(peak).toBe(3);
    });

    it('retries with backoff, then buries the job with its error and stack', async () => {
      const { queue, name } = setup<string>();
      const events: string[] = [];
      const attempts: number[] = [];
      const w = worker<string>(
        name,
        async (job) => {
          attempts.push(job.attempt);
          throw new Error(`nope #${job.attempt}`);
        },
        { backoff: { type: 'fixed', delay: 50 } },
      );
      w.on('failed', (_job, err, retryAt) => events.push(`failed:${err.message}:${retryAt instanceof Date}`));
      w.on('dead', (job, err) => events.push(`dead:${job?.id}:${err.message}`));
      const { id } = await queue.add('x', { attempts: 3, id: 'doomed' });
      await waitFor(() => events.length === 3, { what: 'three outcomes' });
      expect(attempts).toEqual([1, 2, 3]);
      expect(events).toEqual(['failed:nope #1:true', 'failed:nope #2:true', `dead:${id}:nope #3`]);
      const info = await queue.get(id);
      expect(info).toMatchObject({ state: 'dead', attempts: 3, maxAttempts: 3 });
      expect(info?.lastError?.message).toBe('nope #3');
      expect(info?.lastError?.stack).toMatch(/nope #3\n\s+at /);
      const listed = await queue.dead.list();
      expect(listed.map((j) => j.id)).toEqual([id]);
      expect(await queue.counts()).toEqual(countsOf({ scheduled: 0, due: 0, active: 0, dead: 1 }));
    });

    it('uses the job backoff: exponential delays between attempts', async () => {
      const { queue, name } = setup();
      const starts: number[] = [];
      worker(name, async (job) => {
        starts.push(job.claimedAt.getTime());
        throw new Error('again');
      });
      await queue.add('x', { attempts: 3, backoff: { type: 'exponential', delay: 100 } });
      await waitFor(() => starts.length === 3, { what: 'three attempts' });
      expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(100);
      expect(starts[2]! - starts[1]!).toBeGreaterThanOrEqual(200);
    });

    it('dead.retry puts dead jobs back with fresh attempts; dead.remove deletes', async () => {
      const { queue, name } = setup<number>();
      let fail = true;
      const completed: number[] = [];
      const w = worker<number>(name, async (job) => {
        if (fail) throw new Error('down');
        completed.push(job.payload);
      });
      await queue.addBulk([1, 2, 3].map((n) => ({ payload: n, opts: { attempts: 1, id: `d${n}` } })));
      await waitFor(async () => (await queue.counts()).dead === 3, { what: '3 dead' });
      expect(await queue.dead.remove('d3')).toBe(true);
      expect(await queue.dead.remove('d3')).toBe(false);
      fail = false;
      expect(await queue.dead.retry('d1')).toBe(1);
      await waitFor(() => completed.length === 1);
      const progress: number[] = [];
      expect(await queue.dead.retryAll({ onProgress: (n) => progress.push(n) })).toBe(1);
      await waitFor(() => completed.length === 2);
      expect(completed.sort()).toEqual([1, 2]);
      expect(progress).toEqual([1]);
      expect(await footprint(name)).toEqual({ records: 2, completed: 2 });
      await w.close();
    });

    it('an undecodable job is dead-lettered with the reason while others go on', async () => {
      const { queue, name } = setup<number>();
      const r = at.inspector();
      const keys = queueKeys(name);
      const now = await serverNow(r);
      await seedWaiting(r, name, {
        id: 'garbage',
        payload: Buffer.from([0xff, 0x00, 0x7b]),
        maxAttempts: 5,
        due: now,
      });
      expect(await r.hexists(keys.records, 'garbage')).toBe(1);
      await r.quit();
      const ok: number[] = [];
      const dead: Array<{ job: unknown; id: string; message: string }> = [];
      const w = worker<number>(name, async (job) => void ok.push(job.payload));
      w.on('dead', (job, err, id) => dead.push({ job, id, message: err.message }));
      await queue.add(7);
      await waitFor(() => ok.length === 1 && dead.length === 1, { what: 'one done, one dead' });
      expect(dead[0]).toMatchObject({ job: null, id: 'garbage' });
      expect(dead[0]?.message).toMatch(/could not be decoded.*not valid UTF-8/);
      const info = await queue.get('garbage');
      expect(info?.state).toBe('dead');
      expect(info?.decodeError).toMatch(/cannot decode job/);
      expect(info?.lastError?.message).toMatch(/could not be decoded/);
      expect(info?.attempts).toBe(1);
    });

    it('fencing: after a lease expires and the job is re-claimed, the old holder cannot ack, fail or extend', async () => {
      const { queue, name } = setup();
      const keys = queueKeys(name);
      const r = at.inspector();
      await queue.add('x', { id: 'f1', attempts: 3 });
      const first = await claim(r, keys, claimInput(100, 1));
      expect(first.jobs.map((j) => j.id)).toEqual(['f1']);
      const old = first.jobs[0]!;
      await untilServerTime(r, old.deadline);
      const second = await claim(r, keys, claimInput(5_000, 2));
      expect(second.jobs.map((j) => [j.id, j.header.attempts, j.header.holder])).toEqual([['f1', 2, 2]]);
      const current = second.jobs[0]!;
      expect(current.header.claims).toBeGreaterThan(old.header.claims);
      expect(current.member).not.toBe(old.member);

      await expect(ack(r, keys, ackOf(old), ackSettings())).rejects.toThrow(ScriptLeaseLost);
      await expect(
        fail(r, keys, {
          member: old.member,
          retryDelayMs: 0,
          error: { name: 'E', message: 'late' },
          deadMaxCount: 10,
          deadMaxAgeMs: 0,
          eventsCap: 1_000,
          layout: ZSET,
        }),
      ).rejects.toThrow(ScriptLeaseLost);
      expect((await extend(r, keys, 10_000, [old.member], true)).deadlines).toEqual([null]);
      // The current holder is untouched by all that.
      expect(await r.zscore(keys.leases, current.member)).not.toBeNull();
      expect(await ack(r, keys, ackOf(current), ackSettings())).toBe('ok');
      expect(await footprint(name)).toEqual({ records: 1, completed: 1 });
      await r.quit();
    });

    it('an expired lease is refused even before any reaper ran', async () => {
      const { queue, name } = setup();
      const keys = queueKeys(name);
      const r = at.inspector();
      await queue.add('x', { id: 'e1' });
      const [job] = (await claim(r, keys, claimInput(100))).jobs;
      await untilServerTime(r, job!.deadline);
      await expect(ack(r, keys, ackOf(job!), ackSettings())).rejects.toThrow(/expired/);
      await r.quit();
    });

    it('a resent ack or fail that already applied is recognised, not reported as a lost lease', async () => {
      const { queue, name } = setup();
      const keys = queueKeys(name);
      const r = at.inspector();
      await queue.addBulk([
        { payload: 1, opts: { id: 'a1' } },
        { payload: 2, opts: { id: 'a2', attempts: 2 } },
      ]);
      const { jobs } = await claim(r, keys, claimInput(10_000));
      const [a1, a2] = [jobs.find((j) => j.id === 'a1')!, jobs.find((j) => j.id === 'a2')!];
      expect(await ack(r, keys, ackOf(a1), ackSettings())).toBe('ok');
      expect(await ack(r, keys, ackOf(a1), ackSettings())).toBe('already');
      const failInput = {
        member: a2.member,
        retryDelayMs: 60_000,
        error: { name: 'E', message: 'x' },
        deadMaxCount: 10,
        deadMaxAgeMs: 0,
        eventsCap: 1_000,
        layout: ZSET,
      };
      expect((await fail(r, keys, failInput)).outcome).toBe('retry');
      expect((await fail(r, keys, failInput)).outcome).toBe('already');
      expect(await queue.counts()).toEqual({
        scheduled: 1,
        due: 0,
        held: 0,
        active: 0,
        dead: 0,
        completed: 1,
        cancelled: 0,
        waitingChildren: 0,
      });
      await r.quit();
    });

    it('one ack call for a batch: each job gets its own outcome, a repeated member is "already", nothing is left running', async () => {
      const { queue, name } = setup();
      const keys = queueKeys(name);
      const r = at.inspector();
      await queue.addBulk([
        { payload: 1, opts: { id: 'b1' } },
        { payload: 2, opts: { id: 'b2' } },
        { payload: 3, opts: { id: 'b3' } },
      ]);
      const { jobs } = await claim(r, keys, claimInput(10_000));
      const byId = (id: string) => jobs.find((j) => j.id === id)!;
      const before = await r.xlen(keys.events);
      const outcomes = await ackOnly(
        r,
        keys,
        [
          ackOf(byId('b1')),
          // A member of the lease form that no lease has (a malformed one is refused whole).
          { ...ackOf(byId('b2')), member: '9.1|b2' },
          ackOf(byId('b1')),
          ackOf(byId('b3')),
        ],
        ackSettings(),
      );
      expect(outcomes).toEqual([
        { status: 'ok' },
        { status: 'lost', detail: 'not held' },
        { status: 'already' },
        { status: 'ok' },
      ]);
      // One 'completed' event per job applied, not per entry (routine events are on here).
      expect((await r.xlen(keys.events)) - before).toBe(2);
      expect((await queue.get('b1'))?.state).toBe('completed');
      expect((await queue.get('b3'))?.state).toBe('completed');
      expect(await queue.counts()).toEqual({
        scheduled: 0,
        due: 0,
        held: 0,
        active: 1,
        dead: 0,
        completed: 2,
        cancelled: 0,
        waitingChildren: 0,
      });
      expect(await r.zrange(keys.leases, 0, -1)).toEqual([byId('b2').member]);
      // Every id applied is kept against a resent add, in one write for the batch.
      expect((await r.zrange(keys.completed, 0, -1)).sort()).toEqual(['b1', 'b3']);
      await r.quit();
    });

    it('reap returns expired jobs (attempt counted) and buries those out of attempts', async () => {
      const { queue, name } = setup();
      const keys = queueKeys(name);
      const r = at.inspector();
      await queue.addBulk([
        { payload: 1, opts: { id: 'r1', attempts: 2 } },
        { payload: 2, opts: { id: 'r2', attempts: 1 } },
      ]);
      const crashed = await claim(r, keys, claimInput(100, 9));
      expect(
        await reap(r, keys, {
          limit: 100,
          deadMaxCount: 10,
          deadMaxAgeMs: 0,
          eventsCap: 1_000,
          layout: ZSET,
        }),
      ).toMatchObject({
        returned: 0,
        buried: 0,
      });
      await untilServerTime(r, Math.max(...crashed.jobs.map((j) => j.deadline)));
      expect(
        await reap(r, keys, {
          limit: 100,
          deadMaxCount: 10,
          deadMaxAgeMs: 0,
          eventsCap: 1_000,
          layout: ZSET,
        }),
      ).toEqual({
        returned: 1,
        buried: 1,
        nextDeadline: -1,
      });
      expect(
        await reap(r, keys, {
          limit: 100,
          deadMaxCount: 10,
          deadMaxAgeMs: 0,
          eventsCap: 1_000,
          layout: ZSET,
        }),
      ).toEqual({
        returned: 0,
        buried: 0,
        nextDeadline: -1,
      });
      expect(await queue.get('r1')).toMatchObject({
        state: 'scheduled',
        attempts: 1,
        lastError: { message: 'lease expired' },
      });
      expect(await queue.get('r2')).toMatchObject({
        state: 'dead',
        attempts: 1,
        lastError: { message: 'lease expired' },
      });
      await r.quit();
    });

    it('a worker picks up a crashed holder’s job after its lease, as attempt 2', async () => {
      const { queue, name } = setup();
      const keys = queueKeys(name);
      const r = at.inspector();
      await queue.add('x', { id: 'c1' });
      const [crashed] = (await claim(r, keys, claimInput(300, 9))).jobs;
      await r.quit();
      const runs: Array<{ attempt: number; claimedAt: number }> = [];
      worker(
        name,
        async (job) => void runs.push({ attempt: job.attempt, claimedAt: job.claimedAt.getTime() }),
      );
      await waitFor(() => runs.length === 1, { what: 'the re-run' });
      expect(runs[0]!.attempt).toBe(2);
      expect(runs[0]!.claimedAt).toBeGreaterThanOrEqual(crashed!.deadline);
    });

    it('a handler that blocks past its lease loses it visibly; its late result is refused; the job completes once', async () => {
      const { queue, name } = setup();
      const errors: Error[] = [];
      const completions: Array<{ attempt: number }> = [];
      let blocked = false;
      const blocker = worker(
        name,
        async (job) => {
          if (job.attempt === 1) {
            blocked = true;
            const until = Date.now() + 700;
            while (Date.now() < until) {
              // Block the event loop: the lease keeper cannot run.
            }
          }
        },
        { leaseMs: 300, concurrency: 1 },
      );
      blocker.on('error', (err) => errors.push(err));
      blocker.on('completed', (job) => completions.push({ attempt: job.attempt }));
      await blocker.waitUntilReady();
      const { id } = await queue.add('x', { id: 'blocky', attempts: 3 });
      // Seen only once the block is over (it blocks this process too): attempt 1 is the blocker's.
      await waitFor(() => blocked, { what: 'the blocker to run attempt 1' });
      const rescuer = worker(name, async () => {}, { leaseMs: 5_000 });
      rescuer.on('completed', (job) => completions.push({ attempt: job.attempt }));
      await waitFor(
        () =>
          errors.some(
            (e) => e instanceof LeaseLostError && e.jobId === id && /result refused/.test(e.message),
          ),
        { what: "the blocker's late result to be refused" },
      );
      await waitFor(async () => completions.length >= 1 && (await queue.get(id))?.state === 'completed', {
        what: 'attempt 2 to complete',
      });
      expect(completions).toEqual([{ attempt: 2 }]);
    });

    it('job.progress: shown while the job runs, gone with its attempt (completed, or reaped)', async () => {
      const { queue, name } = setup<string>();
      const keys = queueKeys(name);
      const r = at.inspector();
      // What each later attempt finds in the progress hash before it reports anything.
      const seenAtStart: Array<string | null> = [];

      let release = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      const holder = worker<string>(name, async (job) => {
        seenAtStart.push(await r.hget(keys.progress, job.id));
        await job.progress({ pct: 50, of: job.payload });
        await held;
      });
      const { id } = await queue.add('kept');
      await waitFor(async () => (await queue.get(id))?.progress, { what: 'the progress to show' });
      expect(await queue.get(id)).toMatchObject({ state: 'active', progress: { pct: 50, of: 'kept' } });
      release();
      await waitFor(async () => (await queue.get(id))?.state === 'completed', {
        what: 'the job to complete',
      });
      await holder.close();

      const errors: Error[] = [];
      let blocked = false;
      const blocker = worker<string>(
        name,
        async (job) => {
          await job.progress({ step: 'before the block' });
          blocked = true;
          const until = Date.now() + 700;
          while (Date.now() < until) {
            // Block the event loop past the 300 ms lease: the rescuer's claim reaps the attempt.
          }
        },
        { leaseMs: 300, concurrency: 1 },
      );
      blocker.on('error', (err) => errors.push(err));
      await blocker.waitUntilReady();
      const { id: reapedId } = await queue.add('reaped', { attempts: 3 });
      await waitFor(() => blocked, { what: 'attempt 1 to report and block' });
      await blocker.close();
      worker<string>(
        name,
        async (job) => {
          seenAtStart.push(await r.hget(keys.progress, job.id));
        },
        { leaseMs: 5_000 },
      );
      await waitFor(async () => (await queue.get(reapedId))?.state === 'completed', {
        what: 'attempt 2 to complete',
      });
      await r.quit();
      // Neither the completed attempt nor the reaped one left its progress behind.
      expect(seenAtStart).toEqual([null, null]);
      expect(errors.some((e) => e instanceof LeaseLostError && e.jobId === reapedId)).toBe(true);
      expect(await footprint(name)).not.toHaveProperty('progress');
    });

    it('close() waits for running handlers, then acks them', async () => {
      const { queue, name } = setup();
      let finished = false;
      const w = worker(name, async () => {
        await new Promise((r) => setTimeout(r, 200));
        finished = true;
      });
      // Emitted when the ack's reply is back: close() has waited for it, not only for the handler.
      const completed: string[] = [];
      w.on('completed', (job) => completed.push(job.id));
      const { id } = await queue.add('x');
      await waitFor(async () => (await queue.counts()).active === 1);
      await w.close({ timeoutMs: 5_000 });
      expect(finished).toBe(true);
      expect(completed).toEqual([id]);
      expect((await queue.get(id))?.state).toBe('completed');
    });

    it('close() past its timeout aborts handlers and returns their jobs without charging the attempt', async () => {
      const { queue, name } = setup();
      let aborted = false;
      const w = worker(name, async (job) => {
        await new Promise<void>((resolve) => {
          job.signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          });
        });
        throw new Error('aborted');
      });
      // A worker that charged the attempt anyway would send fail.lua as it closes; with fail.lua not
      // yet in the server's cache (this test run alone) that call would be lost on the closing
      // connection and the check would pass. Loaded here, whatever ran before.
      const loader = at.inspector();
      const masters = loader instanceof Cluster ? loader.nodes('master') : [loader];
      for (const node of masters) await node.script('LOAD', script('fail').source);
      await loader.quit();
      const { id } = await queue.add('x', { id: 'slow' });
      await waitFor(async () => (await queue.counts()).active === 1);
      await w.close({ timeoutMs: 100 });
      expect(aborted).toBe(true);
      expect(await queue.get(id)).toMatchObject({
        state: 'scheduled',
        attempts: 0,
        lease: null,
        lastError: null,
      });
      const r = at.inspector();
      expect(await r.zcard(queueKeys(name).leases)).toBe(0);
      await r.quit();
    });

    it('keeps completed jobs when asked, trimmed to the count', async () => {
      const { queue, name } = setup<number>();
      let done = 0;
      worker<number>(name, async () => void done++, { keepCompleted: { count: 2 } });
      for (let i = 0; i < 4; i++) await queue.add(i, { id: `k${i}` });
      await waitFor(() => done === 4);
      await waitFor(async () => (await footprint(name))['completed'] === 2);
      expect(await footprint(name)).toEqual({ completed: 2, records: 2 });
      expect((await queue.get('k3'))?.state).toBe('completed');
    });

    it('cancel removes a waiting job, leaves only its cancelled mark, and get() tells it from unknown', async () => {
      const { queue, name } = setup();
      await queue.addBulk([
        { payload: 1, opts: { id: 'c1', delay: '1h' } },
        { payload: 2, opts: { id: 'c2', delay: '1h' } },
      ]);
      expect(await queue.counts()).toEqual(countsOf({ scheduled: 2, due: 0, active: 0, dead: 0 }));
      expect(await queue.cancel('c1')).toBe(true);
      expect(await queue.cancel('c1')).toBe(false);
      expect(await queue.cancel('never-added')).toBe(false);
      expect(await queue.get('never-added')).toBeNull();
      const info = await queue.get('c1');
      expect(info).toMatchObject({ id: 'c1', state: 'cancelled', payload: undefined });
      expect(info?.cancelledAt).toBeInstanceOf(Date);
      expect(await queue.counts()).toEqual({
        scheduled: 1,
        due: 0,
        held: 0,
        active: 0,
        dead: 0,
        completed: 0,
        cancelled: 1,
        waitingChildren: 0,
      });
      expect(await queue.cancel('c2')).toBe(true);
      expect(await footprint(name)).toEqual({ cancelled: 2, records: 2 });
    });

    it('cancel of a running job: its signal aborts with CancelledError, its late ack is refused, nothing is left running, get says cancelled', async () => {
      const { queue, name } = setup();
      const keys = queueKeys(name);
      const errors: Error[] = [];
      const completed: string[] = [];
      const failed: string[] = [];
      let reason: unknown;
      let progressed = false;
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      const w = worker(
        name,
        async (job) => {
          job.signal.addEventListener('abort', () => {
            reason = job.signal.reason as unknown;
          });
          await job.progress({ step: 1 });
          progressed = true;
          await held; // finishes only after the cancel: its ack comes late, on purpose
        },
        { concurrency: 1 },
      );
      w.on('error', (err) => errors.push(err));
      w.on('completed', (job) => completed.push(job.id));
      w.on('failed', (job) => failed.push(job.id));
      w.on('dead', (_job, _err, id) => failed.push(id));
      await queue.add('run', { id: 'busy', attempts: 3 });
      await waitFor(async () => (await queue.get('busy'))?.state === 'active', { what: 'the job running' });
      // The progress write applied first: sent after the cancel it would be refused and abort the
      // signal with LeaseLostError before the wake message comes (seen once on a loaded machine).
      await waitFor(() => progressed, { what: 'the progress written' });
      expect(await queue.cancel('busy')).toBe(true);
      // Delivered by the `C` wake message, well before any lease renewal (the lease is 30 s).
      await waitFor(() => reason !== undefined, { what: 'the signal to abort' });
      expect(reason).toBeInstanceOf(CancelledError);
      expect((reason as CancelledError).jobId).toBe('busy');
      expect(await queue.cancel('busy')).toBe(false);
      const info = await queue.get('busy');
      expect(info?.state).toBe('cancelled');
      expect(info?.cancelledAt).toBeInstanceOf(Date);
      release();
      await waitFor(() => errors.some((e) => e instanceof CancelledError && e.jobId === 'busy'), {
        what: 'the late ack to be refused and reported',
      });
      expect(completed).toEqual([]);
      expect(failed).toEqual([]);
      expect(await footprint(name)).toEqual({ cancelled: 1, records: 1 });
      const r = at.inspector();
      expect(await r.zcard(keys.leases)).toBe(0);
      expect(await r.hget(keys.progress, 'busy')).toBeNull();
      await r.quit();
      expect((await queue.get('busy'))?.state).toBe('cancelled');
    });

    it('a cancel whose wake message was missed: the refused lease renewal finds it cancelled, and the signal says so', async () => {
      const { queue, name } = setup();
      const keys = queueKeys(name);
      let reason: unknown;
      const w = worker(
        name,
        (job) =>
          new Promise<void>((resolve) => {
            job.signal.addEventListener('abort', () => {
              reason = job.signal.reason as unknown;
              resolve();
            });
          }),
        { leaseMs: 300 },
      );
      w.on('error', () => {});
      await queue.add('x', { id: 'quiet' });
      await waitFor(async () => (await queue.get('quiet'))?.state === 'active', { what: 'the job running' });
      // What cancel.lua writes, without its `C` message (as if the subscription had been down).
      const r = at.inspector();
      const [member] = await r.zrange(keys.leases, 0, -1);
      await r.zrem(keys.leases, member!);
      await r.hset(keys.records, 'quiet', CANCELLED_RECORD);
      await r.zadd(keys.cancelled, await serverNow(r), 'quiet');
      await r.quit();
      await waitFor(() => reason !== undefined, { what: 'the lease keeper to find the job gone' });
      expect(reason).toBeInstanceOf(CancelledError);
    });

    it("a crashed holder's cancelled job is never run again: the reaper finds nothing, its ack is refused", async () => {
      const { queue, name } = setup();
      const keys = queueKeys(name);
      const r = at.inspector();
      await queue.add('x', { id: 'orphan', attempts: 3 });
      // A holder that claimed and then died (as SIGKILL leaves it): no worker process holds it.
      const [crashed] = (await claim(r, keys, claimInput(300, 9))).jobs;
      expect(crashed?.id).toBe('orphan');
      expect(await queue.cancel('orphan')).toBe(true);
      await untilServerTime(r, crashed!.deadline + 1);
      expect(
        await reap(r, keys, {
          limit: 100,
          deadMaxCount: 10,
          deadMaxAgeMs: 0,
          eventsCap: 1_000,
          layout: ZSET,
        }),
      ).toEqual({ returned: 0, buried: 0, nextDeadline: -1 });
      await expect(ack(r, keys, ackOf(crashed!), ackSettings())).rejects.toThrow(/cancelled/);
      const runs: string[] = [];
      const w = worker(name, async (job) => void runs.push(job.id));
      await queue.add('y', { id: 'after' });
      await waitFor(() => runs.includes('after'), { what: 'a later job to run' });
      expect(runs).toEqual(['after']);
      expect((await queue.get('orphan'))?.state).toBe('cancelled');
      await w.close();
      await r.quit();
    });

    it('reschedule moves a waiting job: it runs at the new time, never before', async () => {
      const { queue, name } = setup();
      await queue.addBulk([
        { payload: 1, opts: { id: 'sooner', delay: '1h' } },
        { payload: 2, opts: { id: 'later', delay: 300 } },
      ]);
      expect(await queue.reschedule('sooner', { delay: 300 })).toBe(true);
      expect(await queue.reschedule('later', { delay: '1h' })).toBe(true);
      expect(await queue.reschedule('nobody', { delay: 10 })).toBe(false);
      const info = await queue.get('sooner');
      expect(info?.state).toBe('scheduled');
      const runs: Array<{ id: string; runAt: number; claimedAt: number }> = [];
      worker(name, async (job) => {
        runs.push({ id: job.id, runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime() });
      });
      await waitFor(() => runs.length === 1, { what: 'the rescheduled run', timeoutMs: 3_000 + precisionMs });
      expect(runs[0]!.id).toBe('sooner');
      expect(runs[0]!.runAt).toBe(info!.runAt.getTime());
      expect(runs[0]!.claimedAt).toBeGreaterThanOrEqual(runs[0]!.runAt);
      expect(runs[0]!.claimedAt - runs[0]!.runAt).toBeLessThan(1_000 + precisionMs);
      // 'later' was due at +300 ms before it was moved: it must not run now.
      await new Promise((r) => setTimeout(r, 600));
      expect(runs.map((r) => r.id)).toEqual(['sooner']);
      await waitFor(async () => (await queue.counts()).completed === 1, { what: 'the run acked' });
      expect(await queue.counts()).toEqual({
        scheduled: 1,
        due: 0,
        held: 0,
        active: 0,
        dead: 0,
        completed: 1,
        cancelled: 0,
        waitingChildren: 0,
      });
      expect(await queue.reschedule('later', { runAt: Date.now() + 7_200_000 })).toBe(true);
      expect(await queue.cancel('later')).toBe(true);
      expect(await footprint(name)).toEqual({ completed: 1, cancelled: 1, records: 2 });
    });

    it('replace (debounce) swaps a waiting job’s payload, time and options; moved earlier, it wakes the sleeping worker and runs once, never early', async () => {
      const { queue, name } = setup<{ v: number }>();
      const first = await queue.add({ v: 1 }, { id: 'deb', delay: '1h', attempts: 1 });
      expect(first).toMatchObject({ id: 'deb', created: true });
      const look = at.inspector();
      const before = await connectionsBefore(look);
      const runs: Array<{ v: number; runAt: number; claimedAt: number; attempts: number }> = [];
      const w = worker<{ v: number }>(
        name,
        async (job) => {
          const info = await queue.get(job.id);
          runs.push({
            v: job.payload.v,
            runAt: job.runAt.getTime(),
            claimedAt: job.claimedAt.getTime(),
            attempts: info?.maxAttempts ?? -1,
          });
        },
        { maxSleepMs: 3_600_000 },
      );
      await w.waitUntilReady();
      // Asleep until the 1 h job: only the replace's wake-up can start it near its new time.
      await waitForSleepingWorker(look, before, { blocking: strategy === 'wheel' });
      await look.quit();
      const replaced = await queue.add({ v: 2 }, { id: 'deb', delay: 300, attempts: 4, onExists: 'replace' });
      expect(replaced).toMatchObject({ id: 'deb', created: false, replaced: true });
      expect(replaced.state).toBeUndefined();
      const info = await queue.get('deb');
      expect(info?.state).toBe('scheduled');
      expect(info?.runAt.getTime()).toBe(replaced.runAt.getTime());
      expect(info?.maxAttempts).toBe(4);
      await waitFor(() => runs.length === 1, { what: 'the replaced run', timeoutMs: 3_000 + precisionMs });
      const [run] = runs;
      expect(run!.v).toBe(2);
      expect(run!.attempts).toBe(4);
      expect(run!.runAt).toBe(replaced.runAt.getTime());
      expect(run!.claimedAt).toBeGreaterThanOrEqual(run!.runAt);
      expect(run!.claimedAt - run!.runAt).toBeLessThan(1_000 + precisionMs);
      // Once: nothing of the job is left to run again (the old entry went with the replace).
      await waitFor(async () => (await queue.get('deb'))?.state === 'completed', {
        what: 'the job completed',
      });
      expect(await footprint(name)).toEqual({ completed: 1, records: 1 });
      expect(runs).toHaveLength(1);
    });

    it('replace moves a job later too; keep (the default) leaves it as it was', async () => {
      const { queue } = setup<string>();
      const soon = await queue.add('a', { id: 'later', delay: 500 });
      const kept = await queue.add('b', { id: 'later', delay: '2h' });
      expect(kept).toEqual({ id: 'later', created: false, runAt: soon.runAt });
      expect((await queue.get('later'))?.payload).toBe('a');
      const moved = await queue.add('c', { id: 'later', delay: '2h', onExists: 'replace' });
      expect(moved.replaced).toBe(true);
      expect(moved.runAt.getTime()).toBeGreaterThan(soon.runAt.getTime() + 3_600_000);
      const info = await queue.get('later');
      expect(info?.payload).toBe('c');
      expect(info?.runAt.getTime()).toBe(moved.runAt.getTime());
      // A new id under replace is simply created.
      expect(await queue.add('d', { id: 'fresh', delay: '1h', onExists: 'replace' })).toMatchObject({
        created: true,
      });
      expect(await queue.counts()).toEqual(countsOf({ scheduled: 2, due: 0, active: 0, dead: 0 }));
    });

    it('replace writes nothing to a running or dead job and says its state; keep says a completed one’s', async () => {
      const { queue, name } = setup<string>();
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      const seen: string[] = [];
      worker<string>(name, async (job) => {
        seen.push(`${job.id}:${job.payload}`);
        if (job.id === 'doomed') throw new Error('no');
        if (job.id === 'busy') await held;
      });
      await queue.add('old', { id: 'busy' });
      await waitFor(async () => (await queue.counts()).active === 1, { what: 'the job running' });
      const onActive = await queue.add('new', { id: 'busy', delay: '1h', onExists: 'replace' });
      expect(onActive).toMatchObject({ created: false, replaced: false, state: 'active' });
      expect(await queue.counts()).toEqual(countsOf({ scheduled: 0, due: 0, active: 1, dead: 0 }));
      release();
      await waitFor(async () => (await queue.get('busy'))?.state === 'completed', {
        what: 'the job completed',
      });
      expect(seen).toEqual(['busy:old']);
      // Completed recently (its completed record is kept): under keep (the default) a resent add,
      // nothing written. (A replace adds it again: the next test.)
      const onDone = await queue.add('again', { id: 'busy' });
      expect(onDone).toMatchObject({ created: false, state: 'completed' });
      expect(onDone.completedAt).toBeInstanceOf(Date);

      await queue.add('x', { id: 'doomed', attempts: 1 });
      await waitFor(async () => (await queue.counts()).dead === 1, { what: 'the job dead' });
      const onDead = await queue.add('y', { id: 'doomed', onExists: 'replace' });
      expect(onDead).toMatchObject({ created: false, replaced: false, state: 'dead' });
      expect((await queue.get('doomed'))?.state).toBe('dead');
      expect(await queue.counts()).toEqual({
        scheduled: 0,
        due: 0,
        held: 0,
        active: 0,
        dead: 1,
        completed: 1,
        cancelled: 0,
        waitingChildren: 0,
      });
      expect(seen).toEqual(['busy:old', 'doomed:x']);
    });

    it('debounce after completion: replace of a completed, kept id runs it again with the new payload; keep does not', async () => {
      const { queue, name } = setup<string>();
      const runs: string[] = [];
      worker<string>(
        name,
        async (job) => {
          runs.push(job.payload);
          return `sent ${job.payload}`;
        },
        { keepCompleted: { count: 100, age: '1h' } },
      );
      const first = await queue.add('rev 1', { id: 'edit:7', onExists: 'replace' });
      expect(first).toMatchObject({ created: true });
      await waitFor(async () => (await queue.get('edit:7'))?.state === 'completed', {
        what: 'the first run completed',
        timeoutMs: 3_000 + precisionMs,
      });
      // Kept: keep answers the completed job and writes nothing.
      const kept = await queue.add('rev 1 again', { id: 'edit:7' });
      expect(kept).toMatchObject({ created: false, state: 'completed' });
      // Replace: the edit is a new job of that id, delivered.
      // Due a second ahead, so the worker cannot have claimed it before get() reads it as waiting.
      const again = await queue.add('rev 2', { id: 'edit:7', onExists: 'replace', delay: 1_000 });
      expect(again).toMatchObject({ id: 'edit:7', created: true });
      expect(again.state).toBeUndefined();
      expect(await queue.get('edit:7')).toMatchObject({ state: 'scheduled', payload: 'rev 2', attempts: 0 });
      await waitFor(async () => (await queue.get('edit:7'))?.state === 'completed' && runs.length === 2, {
        what: 'the second run completed',
        timeoutMs: 4_000 + precisionMs,
      });
      expect(runs).toEqual(['rev 1', 'rev 2']);
      expect((await queue.get('edit:7'))?.result).toBe('sent rev 2');
      expect(await queue.counts()).toMatchObject({ scheduled: 0, active: 0, completed: 1 });
    });

    it('a storm of 50 replaces of one waiting id: exactly one run, with the last payload', async () => {
      const { queue, name } = setup<number>();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => queue.add(i, { id: 'storm', delay: 400, onExists: 'replace' })),
      );
      expect(results[0]!.created).toBe(true);
      expect(results.slice(1).every((r) => r.replaced === true)).toBe(true);
      expect(await queue.counts()).toMatchObject({ scheduled: 1, active: 0 });
      const runs: Array<{ payload: number; runAt: number; claimedAt: number }> = [];
      worker<number>(name, async (job) => {
        runs.push({ payload: job.payload, runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime() });
      });
      await waitFor(() => runs.length === 1, { what: 'the run', timeoutMs: 3_000 + precisionMs });
      await waitFor(async () => (await queue.get('storm'))?.state === 'completed', {
        what: 'the job completed',
      });
      expect(await footprint(name)).toEqual({ completed: 1, records: 1 });
      expect(runs).toEqual([
        { payload: 49, runAt: results[49]!.runAt.getTime(), claimedAt: runs[0]!.claimedAt },
      ]);
      expect(runs[0]!.claimedAt).toBeGreaterThanOrEqual(runs[0]!.runAt);
    });

    it('addBulk takes onExists per job, applied in order within one call', async () => {
      const { queue } = setup<string>();
      const out = await queue.addBulk([
        { payload: 'a', opts: { id: 'b1', delay: '1h' } },
        { payload: 'b', opts: { id: 'b1', delay: '2h', onExists: 'replace' } },
        { payload: 'c', opts: { id: 'b1', delay: '3h' } },
        { payload: 'd', opts: { id: 'b2', delay: '1h' } },
      ]);
      expect(out.map((r) => [r.created, r.replaced])).toEqual([
        [true, undefined],
        [false, true],
        [false, undefined],
        [true, undefined],
      ]);
      expect(out[2]!.runAt.getTime()).toBe(out[1]!.runAt.getTime());
      const info = await queue.get('b1');
      expect(info?.payload).toBe('b');
      expect(info?.runAt.getTime()).toBe(out[1]!.runAt.getTime());
      expect(await queue.counts()).toEqual(countsOf({ scheduled: 2, due: 0, active: 0, dead: 0 }));
      const refused = await queue
        .addBulk([
          { payload: 'e', opts: { id: 'b3' } },
          { payload: 'f', opts: { id: 'b1', onExists: 'merge' as never } },
        ])
        .catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(ValidationError);
      expect((refused as ValidationError).message).toMatch(/^job 1: onExists must be 'keep' or 'replace'/);
      expect((refused as ValidationError).issues.map((issue) => issue.path)).toEqual(['onExists']);
      expect(await queue.get('b3')).toBeNull();
      expect((await queue.get('b1'))?.payload).toBe('b');
    });

    it('pause: no worker claims while due jobs wait; resume wakes them at once; lateness shows the pause', async () => {
      const { queue, name } = setup<number>();
      const look = at.inspector();
      const before = await connectionsBefore(look);
      const runs: Array<{ n: number; runAt: number; claimedAt: number }> = [];
      const handler = async (job: Job<number>): Promise<void> =>
        void runs.push({ n: job.payload, runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime() });
      // Hour-long safety timers: only wake messages can explain a prompt start after the resume.
      const workers = [0, 1].map(() => worker<number>(name, handler, { maxSleepMs: 3_600_000 }));
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      await waitForSleepingWorker(look, before, { blocking: strategy === 'wheel' });

      expect(await queue.isPaused()).toBe(false);
      await queue.pause();
      expect(await queue.isPaused()).toBe(true);
      // Adds are accepted while paused, and their wake-ups make both workers claim (and find the gate).
      // Due at once: the wheel puts them straight into its ready list, where a worker blocked on
      // that list would wake at once, again and again, if it did not know the queue is paused.
      const due = await serverNow(look);
      for (let n = 0; n < 4; n++) await queue.add(n, { runAt: due });
      // Past the due time and (wheel) the end of its bucket: every job could be claimed by now.
      await untilServerTime(look, due + precisionMs + 300);
      expect(runs).toEqual([]);
      expect(await queue.counts()).toMatchObject({ scheduled: 4, active: 0 });
      // Paused workers sleep: with due jobs waiting (in the wheel's ready list too) they neither
      // poll nor spin. Over half a second, a few calls at most (a reaper tick), not hundreds.
      const callsBefore = await callsSoFar(look);
      await untilServerTime(look, (await serverNow(look)) + 500);
      expect((await callsSoFar(look)) - callsBefore).toBeLessThan(20);

      const resumedAt = await serverNow(look);
      await queue.resume();
      expect(await queue.isPaused()).toBe(false);
      await waitFor(() => runs.length === 4, { timeoutMs: 5_000, what: 'the runs after the resume' });
      await look.quit();
      expect(runs.map((r) => r.n).sort()).toEqual([0, 1, 2, 3]);
      for (const run of runs) {
        // The due time is kept, so the lateness (claimedAt - runAt) includes the whole pause.
        expect(run.runAt).toBe(due);
        expect(run.claimedAt).toBeGreaterThanOrEqual(resumedAt);
        expect(run.claimedAt - run.runAt).toBeGreaterThanOrEqual(resumedAt - due);
        // Promptly after the resume, with hour-long timers: the resume's wake message did it.
        expect(run.claimedAt - resumedAt).toBeLessThan(1_500);
      }
    });

    it('pause lets a running job finish and ack, and starts nothing new until the resume', async () => {
      const { queue, name } = setup<string>();
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const started: string[] = [];
      const done: string[] = [];
      worker<string>(
        name,
        async (job) => {
          started.push(job.payload);
          if (job.payload === 'running') await gate;
          done.push(job.payload);
        },
        { concurrency: 2, maxSleepMs: 3_600_000 },
      );
      await queue.add('running');
      await waitFor(() => started.length === 1, {
        what: 'the first job started',
        timeoutMs: 5_000 + precisionMs,
      });
      await queue.pause();
      await queue.add('waiting');
      release();
      await waitFor(async () => done.includes('running') && (await queue.counts()).active === 0, {
        what: 'the running job acked while paused',
      });
      const look = at.inspector();
      await untilServerTime(look, (await serverNow(look)) + precisionMs + 300);
      await look.quit();
      expect(started).toEqual(['running']);
      expect(await queue.counts()).toMatchObject({ scheduled: 1, active: 0 });
      await queue.resume();
      await waitFor(() => done.includes('waiting'), { what: 'the job after the resume', timeoutMs: 5_000 });
    });

    it('a paused claim takes nothing and says so; reaping still runs', async () => {
      const { queue, name } = setup<string>();
      await queue.add('a');
      const client = at.inspector();
      const keys = queueKeys(name);
      const first = await claim(client, keys, { ...claimInput(100), limit: 1 });
      expect(first.jobs).toHaveLength(1);
      expect(first.paused).toBe(false);
      await queue.pause();
      await queue.add('b');
      await untilServerTime(client, first.now + 100 + precisionMs + 50);
      // The first lease has expired: the paused claim reaps it back, and takes nothing.
      const paused = await claim(client, keys, claimInput(100));
      expect(paused).toMatchObject({ jobs: [], nextAt: -1, paused: true });
      expect(await queue.counts()).toMatchObject({ scheduled: 2, active: 0 });
      await queue.resume();
      const after = await claim(client, keys, claimInput(100));
      expect(after.paused).toBe(false);
      expect(after.jobs).toHaveLength(2);
      await client.quit();
    });

    it('priority: among due jobs the lower runs first, the default class as 0; the wheel refuses it', async () => {
      const { queue, name } = setup<string>();
      if (strategy === 'wheel') {
        const refused = await queue.add('x', { priority: 1 }).catch((err: unknown) => err);
        expect(refused).toBeInstanceOf(ValidationError);
        expect((refused as ValidationError).issues.map((i) => i.path)).toEqual(['priority']);
        expect((refused as Error).message).toMatch(/wheel/);
        return;
      }
      const r = at.inspector();
      const due = (await serverNow(r)) - 1;
      await r.quit();
      await queue.addBulk([
        { payload: 'p5', opts: { runAt: due, priority: 5 } },
        { payload: 'default', opts: { runAt: due } },
        { payload: 'm3', opts: { runAt: due, priority: -3 } },
        { payload: 'p5-older', opts: { runAt: due - 10, priority: 5 } },
      ]);
      await expect(queue.add('x', { priority: 2000 })).rejects.toThrow(
        /priority must be a whole number from -1024/,
      );
      const ran: string[] = [];
      worker<string>(name, async (job) => void ran.push(job.payload), { concurrency: 1 });
      await waitFor(() => ran.length === 4, { what: 'four runs' });
      expect(ran).toEqual(['m3', 'default', 'p5-older', 'p5']);
      expect((await queue.get((await queue.add('y', { priority: -7, delay: '1h' })).id))?.priority).toBe(-7);
    });

    it('keepCompleted keeps the handler’s result in the completed record, readable by get()', async () => {
      const { queue, name } = setup<number>();
      worker<number>(name, async (job) => ({ doubled: job.payload * 2 }), { keepCompleted: { count: 100 } });
      const { id } = await queue.add(21);
      await waitFor(async () => (await queue.get(id))?.state === 'completed', { what: 'the job completed' });
      expect((await queue.get(id))?.result).toEqual({ doubled: 42 });
    });

    it('without keepCompleted, a completed job is remembered without its result', async () => {
      const { queue, name } = setup<number>();
      worker<number>(name, async (job) => ({ doubled: job.payload * 2 }));
      const { id } = await queue.add(21);
      await waitFor(async () => (await queue.get(id))?.state === 'completed', { what: 'the job completed' });
      expect((await queue.get(id))?.result).toBeUndefined();
    });

    if (strategy === 'wheel') {
      it('refuses grouped jobs, naming group and the strategy (a bucket is a FIFO list)', async () => {
        const { queue } = setup<number>();
        await expect(queue.add(1, { group: 'tenant-1' })).rejects.toMatchObject({
          issues: [{ path: 'group' }],
          message: expect.stringContaining('wheel') as string,
        });
      });
    } else {
      it('groups: at most groups.concurrency running per group, turns among groups, every job once', async () => {
        const { queue, name } = setup<string>();
        const running = new Map<string, number>();
        let over = 0;
        const done: string[] = [];
        worker<string>(
          name,
          async (job) => {
            const g = job.group!;
            running.set(g, (running.get(g) ?? 0) + 1);
            if (running.get(g)! > 2) over++;
            await new Promise((r) => setTimeout(r, 3));
            running.set(g, running.get(g)! - 1);
            done.push(job.payload);
          },
          { concurrency: 8, groups: { concurrency: 2 } },
        );
        await queue.addBulk(
          Array.from({ length: 40 }, (_, i) => ({ payload: `big${i}`, opts: { group: 'big' } })),
        );
        await queue.add('small', { group: 'small' });
        await waitFor(() => done.length === 41, { what: '41 jobs' });
        expect(over).toBe(0);
        expect(new Set(done).size).toBe(41);
        // The one-job group's turn came long before the 40-job group drained.
        expect(done.indexOf('small')).toBeLessThan(20);
        // Nothing of the groups is left: no waiting entry, no group in turn, no running count.
        await waitFor(
          async () => {
            const f = await footprint(name);
            return !f['groupJobs'] && !f['groupsWaiting'] && !f['groupsReady'] && !f['groupCounts'];
          },
          { what: 'group keys empty' },
        );
      });

      it('groups: a claim leases no more of a group than its bound leaves room for, whatever its limit, until an ack frees a slot', async () => {
        const { queue, name } = setup<number>();
        await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ payload: i, opts: { group: 'g' } })));
        const r = at.inspector();
        closers.push(async () => void (await r.quit()));
        const keys = queueKeys(name);
        const bounded = { ...claimInput(60_000), groups: { concurrency: 2 } };
        const first = await claim(r, keys, bounded);
        expect(first.jobs).toHaveLength(2);
        // Full: another claim (another worker) takes none of it.
        expect((await claim(r, keys, bounded)).jobs).toEqual([]);
        expect(await r.hget(keys.groupCounts, 'g')).toBe('2');
        // An ack frees one slot, and the same call takes one job, no more.
        const next = await claim(r, keys, { ...bounded, acks: [ackOf(first.jobs[0]!)] });
        expect(next.acks).toEqual([{ status: 'ok' }]);
        expect(next.jobs).toHaveLength(1);
        expect(await r.hget(keys.groupCounts, 'g')).toBe('2');
      });
    }

    it('caps the dead set by count', async () => {
      const { queue, name } = setup();
      let dead = 0;
      const w = worker(
        name,
        async () => {
          throw new Error('x');
        },
        { dead: { count: 2 } },
      );
      w.on('dead', () => dead++);
      await queue.addBulk([1, 2, 3, 4].map((n) => ({ payload: n, opts: { attempts: 1 } })));
      await waitFor(() => dead === 4);
      expect(await queue.counts()).toMatchObject({ dead: 2 });
      expect(await footprint(name)).toEqual({ dead: 2, records: 2, errors: 2 });
    });

    if (strategy === 'wheel') {
      it('refuses a priority, naming the option and the strategy, and writes nothing', async () => {
        const { queue, name } = setup();
        const refused = await queue.add('x', { id: 'urgent', priority: -5 }).catch((err: unknown) => err);
        expect(refused).toBeInstanceOf(ValidationError);
        expect((refused as ValidationError).message).toMatch(
          /priority is not supported with the wheel strategy/,
        );
        expect((refused as ValidationError).issues.map((issue) => issue.path)).toEqual(['priority']);
        // A batch with one prioritized job is refused whole.
        const batch = await queue
          .addBulk([
            { payload: 'a', opts: { id: 'plain' } },
            { payload: 'b', opts: { id: 'urgent', priority: 1 } },
          ])
          .catch((err: unknown) => err);
        expect(batch).toBeInstanceOf(ValidationError);
        expect(await footprint(name)).toEqual({});
      });
    } else {
      it('priorities: among due jobs lower runs first, equal ones in due order, the default as 0; never early', async () => {
        const { queue, name } = setup<string>();
        const r = at.inspector();
        const now = await serverNow(r);
        await r.quit();
        // Added while no worker runs, all already due, in an order neither due time nor add order
        // would run them in.
        await queue.addBulk([
          { payload: 'p5-old', opts: { runAt: now - 50, priority: 5 } },
          { payload: 'default-new', opts: { runAt: now - 10 } },
          { payload: 'm3-new', opts: { runAt: now - 20, priority: -3 } },
          { payload: 'zero-old', opts: { runAt: now - 40, priority: 0 } },
          { payload: 'p5-new', opts: { runAt: now - 5, priority: 5 } },
          { payload: 'm3-old', opts: { runAt: now - 30, priority: -3 } },
          // The most urgent class there is, but not due yet: it must wait for its time.
          { payload: 'urgent-later', opts: { runAt: now + 1_500, priority: -1024 } },
        ]);
        const runs: Array<{ payload: string; runAt: number; claimedAt: number }> = [];
        worker<string>(
          name,
          async (job) =>
            void runs.push({
              payload: job.payload,
              runAt: job.runAt.getTime(),
              claimedAt: job.claimedAt.getTime(),
            }),
          { concurrency: 1 },
        );
        await waitFor(() => runs.length === 7, { what: '7 runs', timeoutMs: 10_000 });
        expect(runs.filter((run) => run.payload !== 'urgent-later').map((run) => run.payload)).toEqual([
          'm3-old',
          'm3-new',
          'zero-old',
          'default-new',
          'p5-old',
          'p5-new',
        ]);
        for (const run of runs) expect(run.claimedAt, run.payload).toBeGreaterThanOrEqual(run.runAt);
      });

      it('refuses a priority that is not a whole number in -1024..1023, naming it, and writes nothing', async () => {
        const { queue, name } = setup();
        for (const priority of [1.5, 1024, -1025, Number.NaN, '3' as unknown as number]) {
          const refused = await queue.add('x', { id: 'bad', priority }).catch((err: unknown) => err);
          expect(refused, String(priority)).toBeInstanceOf(ValidationError);
          expect((refused as ValidationError).message).toMatch(/^priority must be a whole number from -1024/);
          expect((refused as ValidationError).issues.map((issue) => issue.path)).toEqual(['priority']);
        }
        // One bad job refuses its whole batch.
        const batch = await queue
          .addBulk([
            { payload: 'a', opts: { id: 'good', priority: 3 } },
            { payload: 'b', opts: { id: 'bad', priority: 2_000 } },
          ])
          .catch((err: unknown) => err);
        expect(batch).toBeInstanceOf(ValidationError);
        expect((batch as ValidationError).message).toMatch(/^job 1: priority must be/);
        expect(await footprint(name)).toEqual({});
        // The bounds themselves are accepted.
        await queue.add('lo', { id: 'lo', delay: '1h', priority: -1024 });
        await queue.add('hi', { id: 'hi', delay: '1h', priority: 1023 });
        expect((await queue.get('lo'))?.priority).toBe(-1024);
        expect((await queue.get('hi'))?.priority).toBe(1023);
      });
    }

    it('get() tells a completed job (with its kept result), a cancelled one and an id never added apart', async () => {
      const { queue, name } = setup<number>();
      const done: string[] = [];
      const w = worker<number>(name, async (job) => ({ doubled: job.payload * 2 }), {
        keepCompleted: { count: 10 },
      });
      w.on('completed', (job) => done.push(job.id));
      await queue.add(21, { id: 'finished' });
      await queue.add(1, { id: 'called-off', delay: '1h' });
      await waitFor(() => done.length === 1, { what: 'the run' });
      expect(await queue.cancel('called-off')).toBe(true);

      const completed = await queue.get('finished');
      expect(completed).toMatchObject({ id: 'finished', state: 'completed', result: { doubled: 42 } });
      expect(completed?.completedAt).toBeInstanceOf(Date);
      expect(completed?.cancelledAt).toBeUndefined();
      const cancelled = await queue.get('called-off');
      expect(cancelled).toMatchObject({ id: 'called-off', state: 'cancelled', payload: undefined });
      expect(cancelled?.cancelledAt).toBeInstanceOf(Date);
      expect(cancelled?.completedAt).toBeUndefined();
      expect(cancelled).not.toHaveProperty('result');
      expect(await queue.get('never-added')).toBeNull();

      expect((await queue.list('completed')).map((job) => [job.id, job.result])).toEqual([
        ['finished', { doubled: 42 }],
      ]);
      expect((await queue.list('cancelled')).map((job) => job.id)).toEqual(['called-off']);
      // Both stay visible as such: a re-add of either id writes nothing.
      expect(await queue.add(5, { id: 'finished' })).toMatchObject({ created: false });
      expect(await queue.add(5, { id: 'called-off' })).toMatchObject({ created: false });
      expect((await queue.get('finished'))?.state).toBe('completed');
      expect((await queue.get('called-off'))?.state).toBe('cancelled');
    });
  });
}
