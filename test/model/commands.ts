/**
 * fast-check commands for the model-based test: each runs one real operation (src/operations/*,
 * so the shipped Lua scripts) and the same operation on the model, compares what both returned,
 * then compares the whole Redis state of the queue with the model's (checkState).
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import type { ResolvedBackoff } from '../../src/backoff.js';
import { ack } from '../../src/operations/ack.js';
import { add } from '../../src/operations/add.js';
import { claim } from '../../src/operations/claim.js';
import { extend } from '../../src/operations/extend.js';
import { fail } from '../../src/operations/fail.js';
import { counts, getJob } from '../../src/operations/inspect.js';
import { cancel, deadRemove, deadRetry, reschedule } from '../../src/operations/manage.js';
import { isPaused, pause, resume } from '../../src/operations/pause.js';
import { progress } from '../../src/operations/progress.js';
import { reap } from '../../src/operations/reap.js';
import { release } from '../../src/operations/release.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import type { Strategy } from '../../src/redis/capabilities.js';
import type { QueueKeys } from '../../src/redis/keys.js';
import { ScriptLeaseLost } from '../../src/redis/script-errors.js';
import { CLOCK_KEY } from './clocked-client.js';
import {
  ModelLeaseLost,
  type DeadLimits,
  type Handle,
  type ModelWhen,
  type QueueModel,
  type Retention,
} from './model.js';

/** The system under test for one run: a fresh queue on a real redis-server. */
export interface Real {
  /** Runs the scripts on the fake clock (clocked-client.ts). */
  client: Redis;
  /** A plain client for reading state and setting the clock. */
  plain: Redis;
  keys: QueueKeys;
  /** Wake messages received on the queue's channel since the last check. */
  wakes: string[];
  /** Answers after every message published before it, so `wakes` is complete when it resolves. */
  syncWakes(): Promise<unknown>;
  /** Counter to make every envelope written unique, so a rewrite would show. */
  serial: number;
  /** The events cap every operation of this run passes (0: events off). The model has the same. */
  eventsCap: number;
}

/** Ids with a colon, a pipe (the lease record's separator) and characters whose UTF-16 and UTF-8 orders differ. */
export const ID_POOL = ['a', 'b', 'c:1', 'd|2', 'x\uff5e', 'x\u{1f600}'] as const;
/** Worker ids, one with a pipe in it. */
export const WORKERS = ['w1', 'w2', 'w|3'] as const;

type Model = QueueModel;
type Cmd = fc.AsyncCommand<Model, Real>;

/** A due time as generated: resolved against the model's clock when the command runs. */
type WhenArg = { kind: 'delay'; ms: number } | { kind: 'at'; offset: number } | { kind: 'epoch' };

function resolveWhen(when: WhenArg, now: number): ModelWhen {
  if (when.kind === 'delay') return { delay: when.ms };
  if (when.kind === 'at') return { at: now + when.offset };
  // The earliest due time the scripts accept: far in the past, like the epoch once was here.
  return { at: EARLIEST_DUE };
}

/** 2000-01-01T00:00:00.000Z: add.lua refuses due times before it (includes/args.lua). */
const EARLIEST_DUE = 946_684_800_000;

function showWhen(when: WhenArg): string {
  if (when.kind === 'delay') return `delay ${when.ms}`;
  if (when.kind === 'at') return `at now${when.offset >= 0 ? '+' : ''}${when.offset}`;
  return 'at 2000-01-01';
}

const whenArb: fc.Arbitrary<WhenArg> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('delay' as const),
      ms: fc.oneof(fc.constantFrom(0, 1_000), fc.integer({ min: 0, max: 3_000 })),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('at' as const),
      offset: fc.integer({ min: -2_000, max: 4_000 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'epoch' as const }) },
);
const idArb = fc.nat({ max: ID_POOL.length - 1 });
const deadArb: fc.Arbitrary<DeadLimits> = fc.constantFrom(
  { count: 100_000, ageMs: 0 },
  { count: 2, ageMs: 0 },
  { count: 100_000, ageMs: 2_000 },
);
const retentionArb: fc.Arbitrary<Retention> = fc.constantFrom(
  { count: 0, ageMs: 0 },
  { count: 2, ageMs: 0 },
  { count: 3, ageMs: 1_500 },
  { count: 1, ageMs: 1_500 },
);
/** How many completed ids ack remembers (the `done` set): none, a few, a few for a short while, many. */
const rememberArb: fc.Arbitrary<Retention> = fc.constantFrom(
  { count: 0, ageMs: 0 },
  { count: 2, ageMs: 60_000 },
  { count: 3, ageMs: 1_000 },
  { count: 100_000, ageMs: 300_000 },
);
const leaseArb = fc.constantFrom(300, 1_000, 2_500);
const backoffArb: fc.Arbitrary<ResolvedBackoff | undefined> = fc.option(
  fc.constantFrom<ResolvedBackoff>(
    { type: 'fixed', delay: 500 },
    { type: 'exponential', delay: 1_000, max: 60_000, jitter: true },
  ),
  { nil: undefined },
);
/** Which lease a command uses: 0 is the newest ever handed out, higher picks older (often stale) ones. */
const handlePickArb = fc.nat({ max: 6 });

function pickHandle(model: Model, pick: number): Handle {
  const handles = model.handles;
  return handles[handles.length - 1 - (pick % handles.length)]!;
}

/** The outcome of a token-checked call: its value, or the lease-lost detail it was refused with. */
type Outcome<T> = { value: T } | { refused: string };

async function realOutcome<T>(call: Promise<T>): Promise<Outcome<T>> {
  try {
    return { value: await call };
  } catch (err) {
    if (err instanceof ScriptLeaseLost) return { refused: err.detail };
    throw err;
  }
}

function modelOutcome<T>(call: () => T): Outcome<T> {
  try {
    return { value: call() };
  } catch (err) {
    if (err instanceof ModelLeaseLost) return { refused: err.detail };
    throw err;
  }
}

function pairs(flat: string[]): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, Number(flat[i + 1])]);
  return out;
}

function parsedValues(hash: Record<string, string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(hash).map(([k, v]) => [k, JSON.parse(v) as unknown]));
}

/** Compare every key of the queue, and the wake messages, with the model. */
export async function checkState(model: Model, real: Real): Promise<void> {
  await real.syncWakes();
  expect(real.wakes.splice(0), 'wake messages').toEqual(model.wakes.splice(0));

  const k = real.keys;
  const replies = await real.plain
    .multi()
    .zrange(k.schedule, 0, -1, 'WITHSCORES')
    .zrange(k.active, 0, -1, 'WITHSCORES')
    .zrange(k.dead, 0, -1, 'WITHSCORES')
    .zrange(k.completed, 0, -1, 'WITHSCORES')
    .zrange(k.done, 0, -1, 'WITHSCORES')
    .hgetall(k.jobs)
    .hgetall(k.meta)
    .hgetall(k.leases)
    .hgetall(k.errors)
    .hgetall(k.progress)
    .get(k.token)
    .zrange(k.limiter, 0, -1, 'WITHSCORES')
    .xrange(k.events, '-', '+')
    .get(k.paused)
    .zrange(k.cancelled, 0, -1, 'WITHSCORES')
    .exec();
  if (!replies) throw new Error('state snapshot: transaction aborted');
  const values = replies.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
  const [
    schedule,
    active,
    dead,
    completed,
    done,
    jobs,
    meta,
    leases,
    errors,
    progressed,
    token,
    limiter,
    events,
    paused,
    cancelled,
  ] = values as [
    string[],
    string[],
    string[],
    string[],
    string[],
    Record<string, string>,
    Record<string, string>,
    Record<string, string>,
    Record<string, string>,
    Record<string, string>,
    string | null,
    string[],
    Array<[string, string[]]>,
    string | null,
    string[],
  ];
  const all = [...model.jobs];
  const zset = (state: 'scheduled' | 'active' | 'dead' | 'completed'): Array<[string, number]> =>
    model.inState(state).map(([id, job]) => [id, job.score]);
  expect({
    schedule: pairs(schedule),
    active: pairs(active),
    dead: pairs(dead),
    completed: pairs(completed),
    done: pairs(done),
    jobs,
    meta: parsedValues(meta),
    leases,
    errors: parsedValues(errors),
    progress: progressed,
    token,
    limiter: pairs(limiter),
    events: events.map(([, fields]) => fields),
    paused,
    cancelled: pairs(cancelled),
  }).toEqual({
    schedule: zset('scheduled'),
    active: zset('active'),
    dead: zset('dead'),
    completed: zset('completed'),
    done: model.doneInOrder(),
    jobs: Object.fromEntries(all.map(([id, job]) => [id, job.envelope])),
    meta: Object.fromEntries(all.map(([id, job]) => [id, job.meta])),
    leases: Object.fromEntries(all.filter(([, j]) => j.lease).map(([id, job]) => [id, job.lease])),
    errors: Object.fromEntries(
      all.filter(([, j]) => j.error !== undefined).map(([id, job]) => [id, job.error]),
    ),
    progress: Object.fromEntries(
      all.filter(([, j]) => j.progress !== undefined).map(([id, job]) => [id, job.progress]),
    ),
    token: model.lastToken === 0 ? null : String(model.lastToken),
    limiter: [...model.limiter].sort(([ta, a], [tb, b]) => a - b || (ta < tb ? -1 : ta > tb ? 1 : 0)),
    events: model.events,
    paused: model.pausedAt === null ? null : String(model.pausedAt),
    cancelled: model.cancelledInOrder(),
  });

  // Nothing else under the queue's hash tag: a key the model does not know about fails the check.
  const known = new Set(Object.values(k));
  const stray: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await real.plain.scan(
      cursor,
      'MATCH',
      `${k.schedule.slice(0, -'schedule'.length)}*`,
      'COUNT',
      1000,
    );
    cursor = next;
    stray.push(...found.filter((key) => !known.has(key)));
  } while (cursor !== '0');
  expect(stray, 'keys the model does not know').toEqual([]);
}

abstract class Base implements Cmd {
  /** What the command resolved to when it last ran (handles, times), for the failure report. */
  protected resolved = '';
  check(_model: Readonly<Model>): boolean {
    return true;
  }
  async run(model: Model, real: Real): Promise<void> {
    await this.apply(model, real);
    await checkState(model, real);
  }
  protected abstract apply(model: Model, real: Real): Promise<void>;
  protected abstract describe(): string;
  toString(): string {
    return this.resolved ? `${this.describe()} /* ${this.resolved} */` : this.describe();
  }
}

export class AddCommand extends Base {
  constructor(
    private readonly jobs: ReadonlyArray<{
      id: number;
      when: WhenArg;
      attempts: number;
      backoff: ResolvedBackoff | undefined;
      replace?: boolean;
    }>,
  ) {
    super();
  }
  protected describe(): string {
    const list = this.jobs.map(
      (j) =>
        `${JSON.stringify(ID_POOL[j.id])} ${showWhen(j.when)} x${j.attempts}${j.backoff ? ` ${j.backoff.type}` : ''}${j.replace ? ' replace' : ''}`,
    );
    return `add(${list.join(', ')})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const batch = this.jobs.map((j) => ({
      id: ID_POOL[j.id]!,
      when: resolveWhen(j.when, model.now),
      envelope: `env-${ID_POOL[j.id]!}-${++real.serial}`,
      m: j.attempts,
      ...(j.backoff && { b: j.backoff }),
      ...(j.replace && { replace: true }),
    }));
    this.resolved = `now ${model.now}`;
    const got = await add(
      real.client,
      real.keys,
      batch.map((b) => ({
        id: b.id,
        when: b.when,
        envelope: Buffer.from(b.envelope),
        meta: b.b ? { m: b.m, b: b.b } : { m: b.m },
        ...(b.replace && { replace: true }),
      })),
      real.eventsCap,
      ZSET_LAYOUT,
    );
    expect(got, 'add reply').toEqual(model.add(batch));
  }
}

export class CancelCommand extends Base {
  constructor(private readonly id: number) {
    super();
  }
  protected describe(): string {
    return `cancel(${JSON.stringify(ID_POOL[this.id])})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const id = ID_POOL[this.id]!;
    expect(await cancel(real.client, real.keys, id, real.eventsCap, ZSET_LAYOUT), 'cancel reply').toBe(
      model.cancel(id),
    );
  }
}

export class RescheduleCommand extends Base {
  constructor(
    private readonly id: number,
    private readonly when: WhenArg,
  ) {
    super();
  }
  protected describe(): string {
    return `reschedule(${JSON.stringify(ID_POOL[this.id])}, ${showWhen(this.when)})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const id = ID_POOL[this.id]!;
    const when = resolveWhen(this.when, model.now);
    expect(
      await reschedule(real.client, real.keys, { id, when, eventsCap: real.eventsCap, layout: ZSET_LAYOUT }),
      'reschedule reply',
    ).toBe(model.reschedule(id, when));
  }
}

export class ClaimCommand extends Base {
  constructor(
    private readonly limit: number,
    private readonly leaseMs: number,
    private readonly worker: number,
    private readonly strategy: Strategy,
    private readonly dead: DeadLimits,
    private readonly rate: { max: number; perMs: number },
  ) {
    super();
  }
  protected describe(): string {
    const rate = this.rate.max > 0 ? `, rate ${this.rate.max}/${this.rate.perMs}ms` : '';
    return `claim(limit ${this.limit}, lease ${this.leaseMs}, ${WORKERS[this.worker]}, ${this.strategy}, dead ${JSON.stringify(this.dead)}${rate})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const input = {
      limit: this.limit,
      leaseMs: this.leaseMs,
      worker: WORKERS[this.worker]!,
      dead: this.dead,
      rate: this.rate,
    };
    const got = await claim(real.client, real.keys, {
      strategy: this.strategy,
      limit: input.limit,
      leaseMs: input.leaseMs,
      workerId: input.worker,
      deadMaxCount: this.dead.count,
      deadMaxAgeMs: this.dead.ageMs,
      rate: this.rate,
      eventsCap: real.eventsCap,
      layout: ZSET_LAYOUT,
    });
    const want = model.claim(input);
    this.resolved = `now ${model.now}; got ${got.jobs.map((j) => `${j.id}#${j.token}`).join(' ') || 'none'}`;
    expect(
      {
        now: got.now,
        nextAt: got.nextAt,
        jobs: got.jobs.map((j) => ({ ...j, envelope: j.envelope.toString() })),
        paused: got.paused,
      },
      'claim reply',
    ).toEqual(want);
  }
}

export class PauseCommand extends Base {
  protected describe(): string {
    return 'pause()';
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    this.resolved = `now ${model.now}`;
    const want = model.pause();
    expect(await pause(real.client, [real.keys]), 'pause reply').toBe(want.paused);
    expect(await isPaused(real.client, [real.keys]), 'isPaused after pause').toBe(true);
  }
}

export class ResumeCommand extends Base {
  protected describe(): string {
    return 'resume()';
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    this.resolved = `now ${model.now}`;
    const want = model.resume();
    expect(await resume(real.client, [real.keys]), 'resume reply').toBe(want.resumed);
    expect(await isPaused(real.client, [real.keys]), 'isPaused after resume').toBe(false);
  }
}

export class AckCommand extends Base {
  constructor(
    private readonly pick: number,
    private readonly keep: Retention,
    private readonly remember: Retention,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.handles.length > 0;
  }
  protected describe(): string {
    return `ack(lease #${this.pick} from newest, keep ${JSON.stringify(this.keep)}, remember ${JSON.stringify(this.remember)})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const handle = pickHandle(model, this.pick);
    this.resolved = `${handle.id}#${handle.token} known deadline ${handle.knownDeadline}, now ${model.now}`;
    const got = await realOutcome(
      ack(real.client, real.keys, {
        id: handle.id,
        token: handle.token,
        knownDeadline: handle.knownDeadline,
        keepCompleted: this.keep,
        rememberCompleted: this.remember,
        eventsCap: real.eventsCap,
      }),
    );
    expect(got, 'ack outcome').toEqual(modelOutcome(() => model.ack(handle, this.keep, this.remember)));
  }
}

export class FailCommand extends Base {
  constructor(
    private readonly pick: number,
    private readonly delay: number | null,
    private readonly dead: DeadLimits,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.handles.length > 0;
  }
  protected describe(): string {
    return `fail(lease #${this.pick} from newest, ${this.delay === null ? 'bury' : `retry in ${this.delay}`}, dead ${JSON.stringify(this.dead)})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const handle = pickHandle(model, this.pick);
    this.resolved = `${handle.id}#${handle.token}, now ${model.now}`;
    const error = { name: 'Error', message: `attempt by ${handle.token} failed`, attempt: 1 };
    const got = await realOutcome(
      fail(real.client, real.keys, {
        id: handle.id,
        token: handle.token,
        retryDelayMs: this.delay,
        error,
        deadMaxCount: this.dead.count,
        deadMaxAgeMs: this.dead.ageMs,
        eventsCap: real.eventsCap,
        layout: ZSET_LAYOUT,
      }),
    );
    expect(got, 'fail outcome').toEqual(modelOutcome(() => model.fail(handle, this.delay, error, this.dead)));
  }
}

export class ExtendCommand extends Base {
  constructor(
    private readonly picks: number[],
    private readonly leaseMs: number,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.handles.length > 0;
  }
  protected describe(): string {
    return `extend(leases ${this.picks.map((p) => `#${p}`).join(' ')} from newest, by ${this.leaseMs})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const handles = this.picks.map((p) => pickHandle(model, p));
    this.resolved = `${handles.map((h) => `${h.id}#${h.token}`).join(' ')}, now ${model.now}`;
    const got = await extend(real.client, real.keys, this.leaseMs, handles);
    expect(got, 'extend reply').toEqual(model.extend(this.leaseMs, handles));
  }
}

async function setClock(model: Model, real: Real, to: number): Promise<void> {
  if (to > model.now) model.now = to;
  await real.plain.set(CLOCK_KEY, model.now);
}

export class AdvanceCommand extends Base {
  constructor(private readonly ms: number) {
    super();
  }
  protected describe(): string {
    return `advance(${this.ms} ms)`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    await setClock(model, real, model.now + this.ms);
  }
}

/** Move the clock exactly to an active job's deadline (+ extra): the fencing boundary. */
export class AdvancePastLeaseCommand extends Base {
  constructor(
    private readonly pick: number,
    private readonly extra: number,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.inState('active').length > 0;
  }
  protected describe(): string {
    return `advance to the deadline of active job #${this.pick} + ${this.extra}`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const active = model.inState('active');
    const [id, job] = active[this.pick % active.length]!;
    this.resolved = `${id} deadline ${job.score}, now ${model.now}`;
    await setClock(model, real, job.score + this.extra);
  }
}

/** Move the clock exactly to a waiting job's due time, or 1 ms before it: the never-early boundary. */
export class AdvanceToDueCommand extends Base {
  constructor(
    private readonly pick: number,
    private readonly offset: number,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.inState('scheduled').length > 0;
  }
  protected describe(): string {
    return `advance to the due time of waiting job #${this.pick} ${this.offset >= 0 ? '+' : ''}${this.offset}`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const scheduled = model.inState('scheduled');
    const [id, job] = scheduled[this.pick % scheduled.length]!;
    this.resolved = `${id} due ${job.score}, now ${model.now}`;
    await setClock(model, real, job.score + this.offset);
  }
}

export class ReapCommand extends Base {
  constructor(
    private readonly limit: number,
    private readonly dead: DeadLimits,
  ) {
    super();
  }
  protected describe(): string {
    return `reap(limit ${this.limit}, dead ${JSON.stringify(this.dead)})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const got = await reap(real.client, real.keys, {
      limit: this.limit,
      deadMaxCount: this.dead.count,
      deadMaxAgeMs: this.dead.ageMs,
      eventsCap: real.eventsCap,
      layout: ZSET_LAYOUT,
    });
    expect(got, 'reap reply').toEqual(model.reap(this.limit, this.dead));
  }
}

export class ProgressCommand extends Base {
  constructor(
    private readonly pick: number,
    private readonly value: number,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.handles.length > 0;
  }
  protected describe(): string {
    return `progress(lease #${this.pick} from newest, ${this.value})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const handle = pickHandle(model, this.pick);
    this.resolved = `${handle.id}#${handle.token}, now ${model.now}`;
    const json = JSON.stringify({ pct: this.value });
    const got = await realOutcome(
      progress(real.client, real.keys, { id: handle.id, token: handle.token, json, capBytes: 4_096 }),
    );
    expect(got, 'progress outcome').toEqual(modelOutcome(() => model.progress(handle, json)));
  }
}

export class ReleaseCommand extends Base {
  constructor(
    private readonly pick: number,
    private readonly delay: number,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.handles.length > 0;
  }
  protected describe(): string {
    return `release(lease #${this.pick} from newest, due in ${this.delay})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const handle = pickHandle(model, this.pick);
    this.resolved = `${handle.id}#${handle.token}, now ${model.now}`;
    const got = await release(real.client, real.keys, {
      id: handle.id,
      token: handle.token,
      delayMs: this.delay,
      eventsCap: real.eventsCap,
      layout: ZSET_LAYOUT,
    });
    expect(got, 'release reply').toBe(model.release(handle, this.delay));
  }
}

export class DeadRetryCommand extends Base {
  constructor(
    private readonly id: number | null,
    private readonly batch: number,
  ) {
    super();
  }
  protected describe(): string {
    return this.id === null
      ? `dead.retry(all, batch ${this.batch})`
      : `dead.retry(${JSON.stringify(ID_POOL[this.id])})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const id = this.id === null ? null : ID_POOL[this.id]!;
    const batch = id === null ? this.batch : 1;
    expect(
      await deadRetry(real.client, real.keys, { id, batch, eventsCap: real.eventsCap, layout: ZSET_LAYOUT }),
      'dead.retry reply',
    ).toBe(model.deadRetry(id, batch));
  }
}

export class DeadRemoveCommand extends Base {
  constructor(private readonly id: number) {
    super();
  }
  protected describe(): string {
    return `dead.remove(${JSON.stringify(ID_POOL[this.id])})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const id = ID_POOL[this.id]!;
    expect(await deadRemove(real.client, real.keys, id), 'dead.remove reply').toBe(model.deadRemove(id));
  }
}

export class GetCommand extends Base {
  constructor(private readonly id: number) {
    super();
  }
  protected describe(): string {
    return `get(${JSON.stringify(ID_POOL[this.id])})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const id = ID_POOL[this.id]!;
    const got = await getJob(real.client, real.keys, id, ZSET_LAYOUT);
    expect(got && { ...got, id: undefined, record: got.record.toString() }, 'get reply').toEqual(
      model.get(id) && { ...model.get(id), id: undefined },
    );
  }
}

export class CountsCommand extends Base {
  protected describe(): string {
    return 'counts()';
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    expect(await counts(real.client, real.keys, ZSET_LAYOUT), 'counts reply').toEqual(model.counts());
  }
}

/** Every command, weighted so jobs are added and claimed often enough to reach deep states. */
export const commandArbs: Array<fc.Arbitrary<Cmd>> = [
  fc
    .array(
      fc.record({
        id: idArb,
        when: whenArb,
        attempts: fc.integer({ min: 1, max: 3 }),
        backoff: backoffArb,
        replace: fc.boolean(),
      }),
      { minLength: 1, maxLength: 3 },
    )
    .map((jobs) => new AddCommand(jobs)),
  // Debounce: replace one id, whatever state it is in.
  fc
    .tuple(idArb, whenArb, fc.integer({ min: 1, max: 3 }), backoffArb)
    .map(([id, when, attempts, backoff]) => new AddCommand([{ id, when, attempts, backoff, replace: true }])),
  fc
    .tuple(idArb, whenArb, fc.integer({ min: 1, max: 3 }))
    .map(([id, when, attempts]) => new AddCommand([{ id, when, attempts, backoff: undefined }])),
  idArb.map((id) => new CancelCommand(id)),
  fc.tuple(idArb, whenArb).map(([id, when]) => new RescheduleCommand(id, when)),
  ...[0, 1].map(() =>
    fc
      .tuple(
        fc.integer({ min: 0, max: 3 }),
        leaseArb,
        fc.nat({ max: WORKERS.length - 1 }),
        fc.constantFrom<Strategy>('zpopmin', 'range'),
        deadArb,
        fc.constantFrom({ max: 0, perMs: 0 }, { max: 0, perMs: 0 }, { max: 2, perMs: 1_000 }),
      )
      .map(
        ([limit, lease, worker, strategy, dead, rate]) =>
          new ClaimCommand(limit, lease, worker, strategy, dead, rate),
      ),
  ),
  fc
    .tuple(handlePickArb, retentionArb, rememberArb)
    .map(([pick, keep, remember]) => new AckCommand(pick, keep, remember)),
  fc
    .tuple(handlePickArb, fc.option(fc.integer({ min: 0, max: 1_500 }), { nil: null }), deadArb)
    .map(([pick, delay, dead]) => new FailCommand(pick, delay, dead)),
  fc
    .tuple(fc.array(handlePickArb, { minLength: 1, maxLength: 3 }), leaseArb)
    .map(([picks, lease]) => new ExtendCommand(picks, lease)),
  fc.integer({ min: 1, max: 2_500 }).map((ms) => new AdvanceCommand(ms)),
  fc
    .tuple(fc.nat({ max: 5 }), fc.constantFrom(0, 0, 1, 50))
    .map(([pick, extra]) => new AdvancePastLeaseCommand(pick, extra)),
  fc
    .tuple(fc.nat({ max: 5 }), fc.constantFrom(-1, 0))
    .map(([pick, offset]) => new AdvanceToDueCommand(pick, offset)),
  fc.tuple(fc.integer({ min: 1, max: 3 }), deadArb).map(([limit, dead]) => new ReapCommand(limit, dead)),
  fc.tuple(handlePickArb, fc.constantFrom(0, 700)).map(([pick, delay]) => new ReleaseCommand(pick, delay)),
  fc.tuple(handlePickArb, fc.nat({ max: 100 })).map(([pick, value]) => new ProgressCommand(pick, value)),
  fc
    .tuple(fc.option(idArb, { nil: null }), fc.integer({ min: 1, max: 3 }))
    .map(([id, batch]) => new DeadRetryCommand(id, batch)),
  idArb.map((id) => new DeadRemoveCommand(id)),
  idArb.map((id) => new GetCommand(id)),
  fc.constant(new CountsCommand()),
  // Pause once, resume twice: the queue is paused about a third of the time, so claims still
  // reach deep states, and claims against a paused queue (and its reaping) come often.
  fc.constant(new PauseCommand()),
  fc.constant(new ResumeCommand()),
  fc.constant(new ResumeCommand()),
];
