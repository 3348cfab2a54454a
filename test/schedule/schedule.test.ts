/**
 * queue.schedule / unschedule / schedules and the Scheduler against a real redis-server: what is
 * stored, what is added, the missed-occurrence policy, cron in a time zone, and bad input.
 */
import { Cron } from 'croner';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  EncodeError,
  LayoutMismatchError,
  PayloadTooLargeError,
  Queue,
  ValidationError,
  Worker,
  type QueueOptions,
} from '../../src/index.js';
import { jsonCodec } from '../../src/codec/json.js';
import { decodeRecord, encodeRecord, NEW_JOB_HEADER } from '../../src/record/index.js';
import { configKey, wheelBucketKey } from '../../src/redis/keys.js';
import { runScript, script } from '../../src/redis/scripts.js';
import { waitingKeys } from '../../src/operations/waiting-keys.js';
import type { ScheduleSpec } from '../../src/schedule/index.js';
import { Scheduler } from '../../src/scheduler.js';
import { advanceSchedule, tickContextOf } from '../../src/schedule/tick.js';
import { readSchedules } from '../../src/operations/schedule-read.js';
import { drain } from '../../src/testing/index.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { internals } from '../support/internals.js';

const redis = useRedis();
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function newQueue<T>(options: QueueOptions<T> = {}): Queue<T> {
  const queue = new Queue<T>(uniqueQueue('sched'), { connection: redis.url(), ...options });
  cleanups.push(() => queue.close());
  return queue;
}

function newInspector(): Redis {
  const r = inspector(redis.url());
  cleanups.push(async () => void (await r.quit()));
  return r;
}

/** The waiting jobs of `queue` (default class): id -> due time. */
async function waiting(r: Redis, queue: Queue<unknown>): Promise<Record<string, number>> {
  const flat = await r.zrange(internals(queue).keys.waiting, 0, -1, 'WITHSCORES');
  const out: Record<string, number> = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i]!] = Number(flat[i + 1]);
  return out;
}

/** The stored record of job `id`, decoded (the header and the payload bytes). */
async function recordOf(
  r: Redis,
  queue: Queue<unknown>,
  id: string,
): Promise<ReturnType<typeof decodeRecord>> {
  const stored = await r.hgetBuffer(internals(queue).keys.records, id);
  if (!stored) throw new Error(`no record of ${id}`);
  return decodeRecord(stored);
}

/** Every schedule key of `queue` with its size, to assert what is stored. */
async function scheduleKeys(r: Redis, queue: Queue<unknown>): Promise<Record<string, number>> {
  const k = internals(queue).keys;
  return {
    schedules: await r.hlen(k.schedules),
    payloads: await r.hlen(k.schedulePayloads),
    last: await r.zcard(k.scheduleLast),
  };
}

const MINUTE = 60_000;

describe('queue.schedule', () => {
  it('stores the definition and adds the first occurrence as a job due at the next period', async () => {
    const queue = newQueue<{ to: string; at: Date }>();
    const r = newInspector();
    const before = await serverNow(r);
    const out = await queue.schedule(
      'digest',
      { every: '1m' },
      { to: 'ops', at: new Date(0) },
      { attempts: 5 },
    );
    const after = await serverNow(r);
    const due = out.next.getTime();
    expect(out.status).toBe('created');
    expect(due % MINUTE).toBe(0);
    expect(due).toBeGreaterThan(before);
    expect(due).toBeLessThanOrEqual(after + MINUTE);
    expect(await scheduleKeys(r, queue)).toEqual({ schedules: 1, payloads: 1, last: 1 });
    expect(Number(await r.zscore(internals(queue).keys.scheduleLast, 'digest'))).toBe(due);
    expect(await waiting(r, queue)).toEqual({ [`digest@${due}`]: due });
    const job = await queue.get(`digest@${due}`);
    expect(job).toMatchObject({
      state: 'scheduled',
      attempts: 0,
      maxAttempts: 5,
      payload: { to: 'ops', at: new Date(0) },
    });
    // The record is a new job's: the schedule's attempts in the header, then the template's bytes.
    expect(await r.hgetBuffer(internals(queue).keys.records, `digest@${due}`)).toEqual(
      encodeRecord(
        { ...NEW_JOB_HEADER, maxAttempts: 5 },
        jsonCodec.encodePayload({ to: 'ops', at: new Date(0) }),
      ),
    );
    expect(await r.hget(internals(queue).keys.counters, 'added')).toBe('1');
  });

  it("each occurrence added is an added event in the queue stream, like any add (events only: 'all')", async () => {
    const queue = newQueue<string>({ events: { maxLen: 100, only: 'all' } });
    const r = newInspector();
    await queue.schedule('beat', { every: '1m' }, 'x');
    const [[id, due]] = Object.entries(await waiting(r, queue)) as [[string, number]];
    const events = [];
    for await (const event of queue.events({ from: '0', blockMs: 100 })) {
      events.push(event);
      break;
    }
    expect(events).toMatchObject([{ type: 'added', jobId: id, fields: { runAt: String(due) } }]);
  });

  it('occurrences carry the attempts, backoff and timeout of the schedule', async () => {
    const queue = newQueue<string>();
    const r = newInspector();
    await queue.schedule('slow', { every: '1m' }, 'x', {
      attempts: 2,
      // A duration string is stored as ms: other languages read the meta record too.
      backoff: { type: 'fixed', delay: '5s' },
      timeoutMs: 30_000,
    });
    const [id] = Object.keys(await waiting(r, queue));
    expect((await recordOf(r, queue, id!)).header).toMatchObject({
      attempts: 0,
      claims: 0,
      maxAttempts: 2,
      backoff: { type: 'fixed', delay: 5_000 },
      timeoutMs: 30_000,
    });
    expect(await queue.schedules()).toMatchObject([{ name: 'slow', attempts: 2, timeoutMs: 30_000 }]);
    await expect(queue.schedule('bad', { every: '1m' }, 'x', { timeoutMs: 0 })).rejects.toThrow(
      /timeoutMs must be at least 1 ms/,
    );
  });

  it('declaring the same schedule again changes nothing', async () => {
    const queue = newQueue<{ n: number }>();
    const r = newInspector();
    const first = await queue.schedule('s', { every: '1h' }, { n: 1 });
    const definition = await r.hget(internals(queue).keys.schedules, 's');
    const again = await queue.schedule('s', { every: '1h' }, { n: 1 });
    expect(again).toEqual({ name: 's', status: 'unchanged', next: first.next });
    expect(await r.hget(internals(queue).keys.schedules, 's')).toBe(definition);
    expect(Object.keys(await waiting(r, queue))).toEqual([`s@${first.next.getTime()}`]);
  });

  it('a changed payload replaces the waiting occurrence; a changed spec moves it', async () => {
    const queue = newQueue<{ n: number }>();
    const r = newInspector();
    const first = await queue.schedule('s', { every: '1h' }, { n: 1 });
    const id = `s@${first.next.getTime()}`;
    const updated = await queue.schedule('s', { every: '1h' }, { n: 2 });
    expect(updated).toEqual({ name: 's', status: 'updated', next: first.next });
    expect((await queue.get(id))?.payload).toEqual({ n: 2 });
    expect(Object.keys(await waiting(r, queue))).toEqual([id]);

    // Yearly at New Year: never the same time as the next full hour (but in the last hour of a year).
    const moved = await queue.schedule('s', { cron: '0 0 1 1 *' }, { n: 2 });
    expect(moved.status).toBe('updated');
    expect(moved.next.getTime()).toBeGreaterThan(first.next.getTime());
    expect(await waiting(r, queue)).toEqual({ [`s@${moved.next.getTime()}`]: moved.next.getTime() });
    expect(await queue.get(id)).toBeNull();
  });

  it('computes a cron in its time zone as croner does', async () => {
    const queue = newQueue<string>();
    const r = newInspector();
    const pattern = '0 9 * * 1-5';
    const cron = new Cron(pattern, { timezone: 'Europe/Paris' });
    const before = await serverNow(r);
    const out = await queue.schedule('paris', { cron: pattern, tz: 'Europe/Paris' }, 'hello');
    const after = await serverNow(r);
    const expected = cron.nextRun(new Date(before))!.getTime();
    expect(cron.nextRun(new Date(after))!.getTime()).toBe(expected); // not at 9:00 itself
    expect(out.next.getTime()).toBe(expected);
    expect(await waiting(r, queue)).toEqual({ [`paris@${expected}`]: expected });
    const local = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Paris',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hour12: false,
    }).format(out.next);
    expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
    // And it is not 09:00 UTC: the zone was applied.
    expect(out.next.getUTCHours()).not.toBe(9);
  });

  it('rejects bad input with a ValidationError naming the field, writing nothing', async () => {
    const queue = newQueue<{ n: number }>();
    const r = newInspector();
    const bad: Array<[string, unknown, unknown, RegExp]> = [
      ['', { every: '1m' }, {}, /schedule name must be a non-empty string/],
      ['a b', { every: '1m' }, {}, /may not contain white space/],
      ['s', {}, {}, /exactly one of cron or every/],
      ['s', { cron: '* * * * *', every: '1m' }, {}, /exactly one of cron or every/],
      ['s', { cron: '61 * * * *' }, {}, /cron "61 \* \* \* \*" is not a valid pattern.*minute/],
      ['s', { cron: '0 0 30 2 *' }, {}, /never fires/],
      ['s', { cron: '0 9 * * *', tz: 'Mars/Olympus' }, {}, /tz must be an IANA time zone/],
      ['s', { cron: '0 9 * * *', zone: 'UTC' }, {}, /unknown spec field 'zone'/],
      ['s', { every: 'soon' }, {}, /every: cannot read "soon"/],
      ['s', { every: 50 }, {}, /every must be at least 100 ms/],
      ['s', { every: -1 }, {}, /every must be a finite number/],
      ['s', { every: '1m' }, { missed: 'always' }, /missed must be 'skip' or 'runOnce'/],
      ['s', { every: '1m' }, { attempts: 0 }, /attempts must be a whole number >= 1/],
      ['s', { every: '1m' }, { grace: 'x' }, /grace: cannot read "x"/],
      ['s', { every: '1m' }, { tz: 'UTC' }, /unknown schedule option 'tz'/],
    ];
    for (const [name, spec, opts, message] of bad) {
      const attempt = queue.schedule(name, spec as ScheduleSpec, { n: 1 }, opts as never);
      await expect(attempt, `${name} ${JSON.stringify(spec)} ${JSON.stringify(opts)}`).rejects.toThrow(
        message,
      );
      await expect(
        queue.schedule(name, spec as ScheduleSpec, { n: 1 }, opts as never),
      ).rejects.toBeInstanceOf(ValidationError);
    }
    await expect(queue.schedule('s', { every: '1m' }, { n: () => 1 } as never)).rejects.toBeInstanceOf(
      EncodeError,
    );
    const small = newQueue<string>({ maxPayloadBytes: 200 });
    await expect(small.schedule('s', { every: '1m' }, 'x'.repeat(300))).rejects.toBeInstanceOf(
      PayloadTooLargeError,
    );
    expect(await scheduleKeys(r, queue)).toEqual({ schedules: 0, payloads: 0, last: 0 });
    expect(await scheduleKeys(r, small)).toEqual({ schedules: 0, payloads: 0, last: 0 });
    expect(await r.zcard(internals(queue).keys.waiting)).toBe(0);
  });

  it('validates the payload with the queue schema', async () => {
    const schema = {
      '~standard': {
        version: 1 as const,
        vendor: 'test',
        validate: (value: unknown) =>
          typeof value === 'number' ? { value } : { issues: [{ message: 'expected a number' }] },
      },
    };
    const queue = newQueue<number>({ schema });
    await expect(queue.schedule('s', { every: '1m' }, 'one' as never)).rejects.toThrow(/expected a number/);
    expect(await queue.schedules()).toEqual([]);
  });
});

describe('queue layout', () => {
  it('refuses a schedule when the queue layout changed under the queue, writing nothing', async () => {
    const queue = newQueue<{ n: number }>();
    const r = newInspector();
    await queue.counts(); // the queue adopts the zset layout
    await r.hset(configKey(queue.name), 'layout', 'wheel:1000');
    await expect(queue.schedule('s', { every: '1m' }, { n: 1 })).rejects.toThrow(LayoutMismatchError);
    expect(await scheduleKeys(r, queue)).toEqual({ schedules: 0, payloads: 0, last: 0 });

    // A schedule made before the queue changed layout: the scheduler reports it and adds nothing.
    await r.hset(configKey(queue.name), 'layout', 'zset');
    await queue.schedule('t', { every: 100 }, { n: 1 });
    await r.hset(configKey(queue.name), 'layout', 'wheel:1000');
    const before = await r.zcard(internals(queue).keys.waiting);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const scheduler = new Scheduler(queue);
    const errors: Error[] = [];
    scheduler.on('error', (err) => errors.push(err));
    await scheduler.runOnce();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(LayoutMismatchError);
    expect(errors[0]!.message).toMatch(/has layout 'wheel:1000' but this zpopmin\/range client uses 'zset'/);
    expect(await r.zcard(internals(queue).keys.waiting)).toBe(before);
    expect(scheduler.stats.added).toBe(0);
  });

  it('on a wheel queue, occurrences wait in its buckets, run once each, and updates take them back', async () => {
    const G = 100;
    const queue = newQueue<{ v: number }>({ strategy: 'wheel', wheel: { granularityMs: G } });
    const r = newInspector();
    const scheduler = new Scheduler(queue, { maxSleepMs: 50 });
    cleanups.push(() => scheduler.stop());

    // A minute apart first: its waiting occurrence is far from due while the update below runs.
    // Its occurrence (the next whole minute) is also one of the new definition's (every 4G) when
    // the update comes within 4G of that minute, so the id would be taken again: start clear of it.
    const toMinute = 60_000 - ((await serverNow(r)) % 60_000);
    if (toMinute < 2_000) await new Promise((resolve) => setTimeout(resolve, toMinute + 50));
    const first = await queue.schedule('beat', { every: '1m' }, { v: 1 });
    const firstId = `beat@${first.next.getTime()}`;
    // The waiting occurrence is in its bucket list, none in the schedule ZSET.
    expect(await r.zcard(internals(queue).keys.waiting)).toBe(0);
    const bucket = wheelBucketKey(internals(queue).keys, first.next.getTime() - (first.next.getTime() % G));
    expect(await r.lrange(bucket, 0, -1)).toEqual([firstId]);

    // A new definition takes the waiting occurrence back out of its bucket and adds its own.
    const second = await queue.schedule('beat', { every: 4 * G }, { v: 2 });
    expect(second.status).toBe('updated');
    expect(await queue.get(firstId)).toBeNull();
    expect(await r.lrange(bucket, 0, -1)).not.toContain(firstId);
    // What waits now is the new definition's alone: its first occurrence, plus (rarely) the one
    // after it, when a 4G boundary fell between the upsert's mark and schedule()'s own advance.
    const waiting = (await queue.list('scheduled')).map((job) => job.id);
    expect(waiting).toContain(`beat@${second.next.getTime()}`);
    for (const id of waiting) {
      const at = Number(id.slice('beat@'.length));
      expect(id).toMatch(/^beat@\d+$/);
      expect(at, id).toBeGreaterThanOrEqual(second.next.getTime());
      expect((at - second.next.getTime()) % (4 * G), id).toBe(0);
    }
    expect(waiting.length).toBeLessThanOrEqual(2);
    expect((await queue.counts()).scheduled).toBe(waiting.length);

    // Workers start only now, so that the update above found its occurrence still waiting.
    const ran: Array<{ id: string; v: number; late: number }> = [];
    const worker = new Worker<{ v: number }>(
      queue.name,
      async (job) =>
        void ran.push({ id: job.id, v: job.payload.v, late: job.claimedAt.getTime() - job.runAt.getTime() }),
      { connection: redis.url(), strategy: 'wheel', wheel: { granularityMs: G } },
    );
    cleanups.push(() => worker.close({ timeoutMs: 1_000 }));
    await scheduler.start();
    await waitFor(() => ran.length >= 3, { timeoutMs: 10_000, what: 'three occurrences run' });
    await scheduler.stop();
    expect(new Set(ran.map((run) => run.id)).size, 'each occurrence once').toBe(ran.length);
    expect(ran.every((run) => run.v === 2)).toBe(true);
    // Never early; within the wheel's precision (one bucket) and some scheduling slack.
    for (const run of ran) expect(run.late).toBeGreaterThanOrEqual(0);

    // Removing the schedule takes its waiting occurrence out of the wheel.
    expect(await queue.unschedule('beat')).toBe(true);
    await waitFor(async () => (await queue.counts()).active === 0, {
      what: 'the running occurrence to finish',
    });
    expect(await queue.counts()).toMatchObject({ scheduled: 0, active: 0, dead: 0 });
    expect(await r.llen(internals(queue).keys.ready)).toBe(0);
    expect(await r.zcard(internals(queue).keys.wheel)).toBe(0);
  });
});

describe('schedules stored before layout 2', () => {
  it('are refused with the reason and what to run, never read as a payload', async () => {
    const queue = newQueue<{ n: number }>();
    const r = newInspector();
    // Layout 1 kept the template as an envelope: its bytes would decode as a wrong payload.
    const v1 = { v: 1, rev: 'old', spec: { every: 60_000 }, missed: 'skip', grace: 1_000, m: 3 };
    await r.hset(internals(queue).keys.schedules, 'old', JSON.stringify(v1));
    await r.hset(
      internals(queue).keys.schedulePayloads,
      'old',
      '{"v":1,"id":"old@template","version":1,"payload":1}',
    );
    await r.zadd(internals(queue).keys.scheduleLast, (await serverNow(r)) - MINUTE, 'old');
    await expect(queue.schedules()).rejects.toThrow(
      /'old' was stored by a delayq before layout 2.*delayq migrate/,
    );
    const scheduler = new Scheduler(queue);
    const errors: Error[] = [];
    scheduler.on('error', (err) => errors.push(err));
    await scheduler.runOnce();
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/delayq migrate/)]);
    expect(await r.zcard(internals(queue).keys.waiting)).toBe(0);
  });
});

describe('queue.unschedule and queue.schedules', () => {
  it('lists every schedule with its definition and next occurrence', async () => {
    const queue = newQueue<{ kind: string; since?: Date }>();
    const a = await queue.schedule(
      'a-hourly',
      { every: '1h' },
      { kind: 'a', since: new Date(5) },
      { missed: 'runOnce' },
    );
    const b = await queue.schedule(
      'b-paris',
      { cron: '30 8 * * *', tz: 'Europe/Paris' },
      { kind: 'b' },
      { attempts: 7, backoff: { type: 'fixed', delay: 500 }, grace: '5m' },
    );
    const list = await queue.schedules();
    const expected = [
      {
        name: 'a-hourly',
        spec: { every: 3_600_000 },
        payload: { kind: 'a', since: new Date(5) },
        missed: 'runOnce',
        grace: 1_000,
        attempts: 3,
        next: a.next,
      },
      {
        name: 'b-paris',
        spec: { cron: '30 8 * * *', tz: 'Europe/Paris' },
        payload: { kind: 'b' },
        missed: 'skip',
        grace: 300_000,
        attempts: 7,
        backoff: { type: 'fixed', delay: 500 },
        next: b.next,
      },
    ].sort((x, y) => x.next.getTime() - y.next.getTime());
    expect(list).toEqual(expected);
  });

  it('unschedule removes the schedule and its waiting next occurrence', async () => {
    const queue = newQueue<{ n: number }>();
    const r = newInspector();
    const out = await queue.schedule('gone', { every: '1h' }, { n: 1 });
    const keep = await queue.schedule('kept', { every: '1h' }, { n: 2 });
    expect(await queue.unschedule('gone')).toBe(true);
    expect(await queue.unschedule('gone')).toBe(false);
    expect(await queue.get(`gone@${out.next.getTime()}`)).toBeNull();
    expect((await queue.schedules()).map((s) => s.name)).toEqual(['kept']);
    expect(await scheduleKeys(r, queue)).toEqual({ schedules: 1, payloads: 1, last: 1 });
    expect(await waiting(r, queue)).toEqual({ [`kept@${keep.next.getTime()}`]: keep.next.getTime() });
  });

  it('a scheduler adds nothing more for a removed schedule', async () => {
    const queue = newQueue<{ n: number }>();
    await queue.schedule('fast-gone', { every: 100 }, { n: 1 });
    await queue.schedule('fast-kept', { every: 100 }, { n: 2 });
    expect(await queue.unschedule('fast-gone')).toBe(true);
    // Past both schedules' next occurrences: the kept one needs its next added, the removed one not.
    await new Promise((resolve) => setTimeout(resolve, 250));
    const scheduler = new Scheduler(queue);
    const added: string[] = [];
    scheduler.on('added', (occurrence) => added.push(occurrence.schedule));
    await scheduler.runOnce();
    expect(added.length).toBeGreaterThan(0);
    expect(new Set(added)).toEqual(new Set(['fast-kept']));
  });
});

describe('exactly once', () => {
  it('never adds an occurrence again after its job completed and was deleted', async () => {
    const queue = newQueue<{ n: number }>();
    const r = newInspector();
    const read0 = await readSchedules(internals(queue).client, internals(queue).keys, {
      mode: 'one',
      name: 'x',
    });
    expect(read0.entries).toEqual([]);
    // Grace 0: occurrences missed while nothing ran are skipped, so only the next one is added.
    await queue.schedule('x', { every: 100 }, { n: 1 }, { grace: 0 });
    // Let the first occurrence fall due, run it, and add the next.
    const first = Number(await r.zscore(internals(queue).keys.scheduleLast, 'x'));
    const stale = (
      await readSchedules(internals(queue).client, internals(queue).keys, { mode: 'one', name: 'x' })
    ).entries[0]!;
    await new Promise((resolve) => setTimeout(resolve, 150));
    const ran = await drain(queue, async () => {});
    // On a busy machine schedule() itself may outlast a period and add the one after too: then
    // `first` (the mark) is that later one, and both ran.
    expect(ran.completed.map((c) => c.id)).toContain(`x@${first}`);
    // The completed record stays while it is kept; trimming it (as trim.lua would) must not let
    // the occurrence be added again.
    await r.hdel(internals(queue).keys.records, `x@${first}`);
    await r.zrem(internals(queue).keys.completed, `x@${first}`);
    const scheduler = new Scheduler(queue);
    await scheduler.runOnce();
    const mark = Number(await r.zscore(internals(queue).keys.scheduleLast, 'x'));
    expect(mark).toBeGreaterThan(first);

    // A scheduler that read the schedule before all that, when `first` was its newest occurrence
    // and the one after was due to be added, is refused as a whole.
    const late = await advanceSchedule(tickContextOf(queue), stale, first);
    expect(late).toEqual({ outcome: 'stale', last: mark, added: [] });

    // Even with the current mark, an occurrence at or before it is never added: the id alone
    // (name + due time) would not stop it, since that job is gone. Such a call is refused whole
    // (the script takes only due times after the mark), and nothing is written.
    const definition = JSON.parse((await r.hget(internals(queue).keys.schedules, 'x')) ?? '{}') as {
      rev: string;
    };
    const refused = runScript(
      internals(queue).client,
      script('schedule-tick'),
      [
        ...waitingKeys(internals(queue).keys),
        internals(queue).keys.records,
        internals(queue).keys.wake,
        internals(queue).keys.counters,
        internals(queue).keys.events,
        internals(queue).keys.schedules,
        internals(queue).keys.scheduleLast,
        internals(queue).keys.scheduleWake,
        configKey(queue.name),
      ],
      [
        'x',
        definition.rev,
        mark,
        1_000,
        'runOnce',
        0,
        encodeRecord(
          NEW_JOB_HEADER,
          (await internals(queue).client.hgetBuffer(internals(queue).keys.schedulePayloads, 'x'))!,
        ),
        2,
        first,
        mark,
      ],
    );
    await expect(refused).rejects.toThrow(/ARGV\[9\] due time \d+ is not after the mark ARGV\[3\]/);
    expect(Number(await r.zscore(internals(queue).keys.scheduleLast, 'x'))).toBe(mark);
    expect(await r.hexists(internals(queue).keys.records, `x@${first}`)).toBe(0);
    expect(Object.keys(await waiting(r, queue))).toEqual([`x@${mark}`]);
  });
});

describe('missed occurrences', () => {
  /**
   * Take back occurrence `id` as if it had never been added: cancelled, and its cancelled record
   * trimmed (a kept record of the id would count as the occurrence added, as in add).
   */
  async function unadd(queue: Queue<{ n: number }>, r: Redis, id: string): Promise<void> {
    expect(await queue.cancel(id)).toBe(true);
    await r.hdel(internals(queue).keys.records, id);
    await r.zrem(internals(queue).keys.cancelled, id);
  }

  /**
   * Seed: an `every 1m` schedule whose schedulers were all down for ten minutes: its mark is ten
   * periods back and no occurrence since was added. Grace 0 so "missed" is exact.
   */
  async function afterOutage(
    missed: 'skip' | 'runOnce',
  ): Promise<{ queue: Queue<{ n: number }>; r: Redis; mark: number }> {
    const queue = newQueue<{ n: number }>();
    const r = newInspector();
    const out = await queue.schedule('m', { every: '1m' }, { n: 1 }, { missed, grace: 0 });
    await unadd(queue, r, `m@${out.next.getTime()}`);
    const mark = out.next.getTime() - 11 * MINUTE;
    await r.zadd(internals(queue).keys.scheduleLast, 'XX', mark, 'm');
    return { queue, r, mark };
  }

  it("'skip' adds none of them, only the next one", async () => {
    const { queue, r } = await afterOutage('skip');
    const before = await serverNow(r);
    const scheduler = new Scheduler(queue);
    await scheduler.runOnce();
    const after = await serverNow(r);
    const jobs = await waiting(r, queue);
    const dues = Object.values(jobs);
    expect(dues).toHaveLength(1);
    const next = dues[0]!;
    expect(next % MINUTE).toBe(0);
    expect(next).toBeGreaterThan(before);
    expect(next).toBeLessThanOrEqual(after + MINUTE);
    expect(jobs).toEqual({ [`m@${next}`]: next });
    expect(Number(await r.zscore(internals(queue).keys.scheduleLast, 'm'))).toBe(next);
    expect(scheduler.stats.added).toBe(1);
  });

  it("'runOnce' adds the latest missed one, once, due at its own time, and the next one", async () => {
    const { queue, r, mark } = await afterOutage('runOnce');
    const before = await serverNow(r);
    const scheduler = new Scheduler(queue);
    await scheduler.runOnce();
    const after = await serverNow(r);
    const dues = Object.values(await waiting(r, queue)).sort((a, b) => a - b);
    expect(dues).toHaveLength(2);
    const [missed, next] = dues as [number, number];
    expect(missed % MINUTE).toBe(0);
    expect(missed).toBeGreaterThan(mark);
    expect(missed).toBeLessThan(after);
    expect(missed).toBeGreaterThan(before - MINUTE);
    expect(next).toBe(missed + MINUTE);
    expect(Number(await r.zscore(internals(queue).keys.scheduleLast, 'm'))).toBe(next);
    // The missed one is due already: a drain runs it, and only it.
    const ran = await drain(queue, async (job) => job.runAt.getTime());
    expect(ran.completed.map((c) => [c.id, c.result])).toEqual([[`m@${missed}`, missed]]);
    // A second round adds nothing more: the missed ones are behind the mark for good.
    await scheduler.runOnce();
    expect(Object.keys(await waiting(r, queue))).toEqual([`m@${next}`]);
  });

  it('occurrences late by less than the grace are all still added', async () => {
    const queue = newQueue<{ n: number }>();
    const r = newInspector();
    const out = await queue.schedule('g', { every: '1m' }, { n: 1 }, { grace: '10m' });
    await unadd(queue, r, `g@${out.next.getTime()}`);
    // Down for the last four periods and a bit: the four occurrences since are within the grace.
    const mark = out.next.getTime() - 5 * MINUTE;
    await r.zadd(internals(queue).keys.scheduleLast, 'XX', mark, 'g');
    const scheduler = new Scheduler(queue);
    await scheduler.runOnce();
    const dues = Object.values(await waiting(r, queue)).sort((a, b) => a - b);
    expect(dues).toEqual([1, 2, 3, 4, 5].map((i) => mark + i * MINUTE));
    expect(scheduler.stats.added).toBe(5);
  });
});
