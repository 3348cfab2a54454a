/**
 * fast-check commands for the lifecycle model test (lifecycle.test.ts): each runs one real operation (src/operations/*,
 * so the shipped Lua scripts) and the same operation on the model, compares what both returned,
 * then compares the whole Redis state of the queue with the model's (checkState).
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import type { ResolvedBackoff } from '../../src/backoff.js';
import { ack, type AckSettings } from '../../src/operations/ack.js';
import { add } from '../../src/operations/add.js';
import { claim } from '../../src/operations/claim.js';
import { extend } from '../../src/operations/extend.js';
import { fail } from '../../src/operations/fail.js';
import { counts } from '../../src/operations/counts.js';
import { getJob } from '../../src/operations/get.js';
import { cancel } from '../../src/operations/cancel.js';
import { deadRemove } from '../../src/operations/dead-remove.js';
import { deadRetry } from '../../src/operations/dead-retry.js';
import { reschedule } from '../../src/operations/reschedule.js';
import { isPaused, pause } from '../../src/operations/pause.js';
import { resume } from '../../src/operations/resume.js';
import { progress } from '../../src/operations/progress.js';
import { reap } from '../../src/operations/reap.js';
import { release } from '../../src/operations/release.js';
import { trim } from '../../src/operations/trim.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import type { Strategy } from '../../src/redis/capabilities.js';
import type { QueueKeys } from '../../src/redis/keys.js';
import { ScriptLeaseLost } from '../../src/redis/script-errors.js';
import { decodeRecord, encodeRecord, finalRecord } from '../../src/record/index.js';
import { CLOCK_KEY } from './clocked-client.js';
import {
  ModelLeaseLost,
  type Handle,
  type ModelJob,
  type LifecycleModel,
  type Retention,
} from './lifecycle-model.js';

/** The system under test for one run: a fresh queue on a real redis-server. */
export interface Real {
  /** Runs the scripts on the fake clock (clocked-client.ts). */
  client: Redis;
  /** A plain client for reading state and setting the clock. */
  plain: Redis;
  keys: QueueKeys;
  /** Messages received on the queue's wake channel since the last check. */
  wakes: string[];
  /** Answers after every message published before it, so `wakes` is complete when it resolves. */
  syncWakes(): Promise<unknown>;
  /** Counter to make every payload written unique, so a rewrite would show. */
  serial: number;
}

/** Ids with a colon (the p/r member separator), a pipe (the lease member's) and characters whose UTF-16 and UTF-8 orders differ. */
export const ID_POOL = ['a', 'b', 'c:1', 'd|2', 'x\uff5e', 'x\u{1f600}'] as const;
/** Holder numbers (the worker registry's), as claim blocks record them. */
export const HOLDERS = [1, 2, 70_000] as const;

type Model = LifecycleModel;
type Cmd = fc.AsyncCommand<Model, Real>;

/** Events are off in these runs: the stream is a log, not state the scripts read back. */
const EVENTS_OFF = 0;
/** Progress values are far below any cap the script checks. */
const PROGRESS_CAP = 4_096;

/** A due time as generated, resolved against the model's clock when the command runs. */
type WhenArg = { kind: 'in'; ms: number } | { kind: 'epoch' };

/** 2000-01-01T00:00:00.000Z: add.lua refuses due times before it (includes/args.lua). */
const EARLIEST_DUE = 946_684_800_000;

function resolveWhen(when: WhenArg, now: number): number {
  return when.kind === 'in' ? now + when.ms : EARLIEST_DUE;
}

function showWhen(when: WhenArg): string {
  return when.kind === 'in' ? `at now${when.ms >= 0 ? '+' : ''}${when.ms}` : 'at 2000-01-01';
}

const whenArb: fc.Arbitrary<WhenArg> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('in' as const),
      ms: fc.oneof(fc.constantFrom(0, 1_000), fc.integer({ min: -2_000, max: 3_000 })),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'epoch' as const }) },
);
const idArb = fc.nat({ max: ID_POOL.length - 1 });
/** Mostly the default class; priorities on both sides of it, and the bounds. */
const priorityArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant(0) },
  { weight: 3, arbitrary: fc.constantFrom(-5, -1, 1, 7) },
  { weight: 1, arbitrary: fc.constantFrom(-1024, 1023) },
);
const deadArb: fc.Arbitrary<Retention> = fc.constantFrom(
  { count: 100_000, ageMs: 0 },
  { count: 2, ageMs: 0 },
  { count: 100_000, ageMs: 2_000 },
);
const retentionArb: fc.Arbitrary<Retention> = fc.constantFrom(
  { count: 100_000, ageMs: 0 },
  { count: 2, ageMs: 0 },
  { count: 1, ageMs: 1_500 },
  { count: 0, ageMs: 3_000 },
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

/** The outcome of a lease-checked call: its value, or the lease-lost detail it was refused with. */
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

/** A record as the check compares it: its header decoded and its body as text. */
function shown(record: Buffer): unknown {
  const { header, payload } = decodeRecord(record);
  return { header, body: payload.toString() };
}

/** The record `j` must hold for a job of the model. */
function expectedRecord(job: ModelJob): Buffer {
  // A cancelled record keeps the claim block and max attempts (cancel.lua, rec_final).
  if (job.state === 'cancelled') return finalRecord(job.header, 'cancelled');
  if (job.state === 'completed') {
    // These acks send no final record: the claim script makes it, claim block kept (claim-acks.lua).
    return finalRecord(
      job.header,
      'completed',
      job.result === undefined ? undefined : Buffer.from(job.result),
    );
  }
  return encodeRecord(job.header, Buffer.from(job.payload));
}

/** The keys the model accounts for; any other key of the queue fails the check. */
function modelledKeys(k: QueueKeys): string[] {
  return [
    k.waiting,
    k.prioWaiting,
    k.prioReady,
    k.leases,
    k.completed,
    k.cancelled,
    k.dead,
    k.records,
    k.errors,
    k.progress,
    k.paused,
    k.counters,
  ];
}

/**
 * Compare every key of the queue, and the control messages on its wake channel (P, R <head>,
 * C <member>), with the model. Due-time wake messages ("<due ms>") are left out: how many a batch
 * sends is an optimisation, not state; the conformance suite checks that sleeping workers wake.
 */
export async function checkState(model: Model, real: Real): Promise<void> {
  await real.syncWakes();
  const control = real.wakes.splice(0).filter((message) => !/^\d+$/.test(message));
  expect(control, 'control messages on the wake channel').toEqual(model.wakes.splice(0));

  const k = real.keys;
  const replies = await real.plain
    .multi()
    .zrange(k.waiting, 0, -1, 'WITHSCORES')
    .zrange(k.prioWaiting, 0, -1, 'WITHSCORES')
    .zrange(k.prioReady, 0, -1, 'WITHSCORES')
    .zrange(k.leases, 0, -1, 'WITHSCORES')
    .zrange(k.completed, 0, -1, 'WITHSCORES')
    .zrange(k.cancelled, 0, -1, 'WITHSCORES')
    .zrange(k.dead, 0, -1, 'WITHSCORES')
    .hgetallBuffer(k.records)
    .hgetall(k.errors)
    .hgetall(k.progress)
    .get(k.paused)
    .hgetall(k.counters)
    .exec();
  if (!replies) throw new Error('state snapshot: transaction aborted');
  const values = replies.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
  const [s, p, r, a, c, x, d, records, errors, progressed, paused, counters] = values as [
    string[],
    string[],
    string[],
    string[],
    string[],
    string[],
    string[],
    Record<string, Buffer>,
    Record<string, string>,
    Record<string, string>,
    string | null,
    Record<string, string>,
  ];
  const all = [...model.jobs];
  expect({
    s: pairs(s),
    p: pairs(p),
    // r's scores reach 2^53: compared as Redis prints them, through Number (exact below 2^53).
    r: pairs(r),
    a: pairs(a),
    c: pairs(c),
    x: pairs(x),
    d: pairs(d),
    j: Object.fromEntries(Object.entries(records).map(([id, rec]) => [id, shown(rec)])),
    e: Object.fromEntries(Object.entries(errors).map(([id, json]) => [id, JSON.parse(json) as unknown])),
    pg: progressed,
    z: paused,
    n: Object.fromEntries(Object.entries(counters).map(([name, v]) => [name, Number(v)])),
  }).toEqual({
    s: model.waitingSet(),
    p: model.prioWaitingSet(),
    r: model.prioReadySet(),
    a: model.leaseSet(),
    c: model.finishedSet('completed'),
    x: model.finishedSet('cancelled'),
    d: model.finishedSet('dead'),
    j: Object.fromEntries(all.map(([id, job]) => [id, shown(expectedRecord(job))])),
    e: Object.fromEntries(all.filter(([, j]) => j.error !== undefined).map(([id, j]) => [id, j.error])),
    pg: Object.fromEntries(
      all.filter(([, j]) => j.progress !== undefined).map(([id, j]) => [id, j.progress]),
    ),
    z: model.pausedAt === null ? null : String(model.pausedAt),
    n: Object.fromEntries(model.counters),
  });

  // Nothing else under the queue's hash tag: a key the model does not know about fails the check.
  const known = new Set(modelledKeys(k));
  const prefix = k.records.slice(0, -1);
  const stray: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await real.plain.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
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

/** One job of an AddCommand, as generated. */
export interface AddArg {
  id: number;
  when: WhenArg;
  attempts: number;
  backoff: ResolvedBackoff | undefined;
  priority: number;
  replace: boolean;
}

export class AddCommand extends Base {
  constructor(private readonly jobs: readonly AddArg[]) {
    super();
  }
  protected describe(): string {
    const list = this.jobs.map(
      (j) =>
        `${JSON.stringify(ID_POOL[j.id])} ${showWhen(j.when)} x${j.attempts}` +
        `${j.backoff ? ` ${j.backoff.type}` : ''}${j.priority !== 0 ? ` prio ${j.priority}` : ''}${j.replace ? ' replace' : ''}`,
    );
    return `add(${list.join(', ')})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const batch = this.jobs.map((j) => ({
      id: ID_POOL[j.id]!,
      at: resolveWhen(j.when, model.now),
      payload: `pl-${ID_POOL[j.id]!}-${++real.serial}`,
      maxAttempts: j.attempts,
      ...(j.backoff && { backoff: j.backoff }),
      priority: j.priority,
      replace: j.replace,
    }));
    this.resolved = `now ${model.now}`;
    const got = await add(
      real.client,
      real.keys,
      batch.map((b) => ({
        id: b.id,
        when: { at: b.at },
        record: encodeRecord(
          {
            attempts: 0,
            claims: 0,
            claimedAt: 0,
            runDue: 0,
            holder: 0,
            maxAttempts: b.maxAttempts,
            priority: b.priority,
            version: 1,
            hasError: false,
            completed: false,
            cancelled: false,
            hasResult: false,
            ...(b.backoff && { backoff: b.backoff }),
          },
          Buffer.from(b.payload),
        ),
        priority: b.priority,
        mode: b.replace ? ('replace' as const) : ('keep' as const),
      })),
      EVENTS_OFF,
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
    this.resolved = `now ${model.now}`;
    const got = await cancel(real.client, real.keys, { id, eventsCap: EVENTS_OFF, layout: ZSET_LAYOUT });
    expect(got, 'cancel reply').toBe(model.cancel(id));
  }
}

export class ClaimCommand extends Base {
  constructor(
    private readonly limit: number,
    private readonly leaseMs: number,
    private readonly holder: number,
    private readonly strategy: Strategy,
    private readonly dead: Retention,
  ) {
    super();
  }
  protected describe(): string {
    return `claim(limit ${this.limit}, lease ${this.leaseMs}, holder ${HOLDERS[this.holder]}, ${this.strategy}, dead ${JSON.stringify(this.dead)})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const holder = HOLDERS[this.holder]!;
    const got = await claim(real.client, real.keys, {
      strategy: this.strategy,
      limit: this.limit,
      leaseMs: this.leaseMs,
      holder,
      deadMaxCount: this.dead.count,
      deadMaxAgeMs: this.dead.ageMs,
      rate: { max: 0, perMs: 0 },
      eventsCap: EVENTS_OFF,
      zmscore: true,
      layout: ZSET_LAYOUT,
    });
    const want = model.claim({
      limit: this.limit,
      leaseMs: this.leaseMs,
      holder,
      pop: this.strategy === 'zpopmin',
      dead: this.dead,
    });
    this.resolved = `now ${model.now}; got ${got.jobs.map((j) => j.member).join(' ') || 'none'}`;
    expect(
      {
        now: got.now,
        nextAt: got.nextAt,
        paused: got.paused,
        jobs: got.jobs.map((j) => ({
          id: j.id,
          member: j.member,
          header: j.header,
          payload: j.payload.toString(),
          runAt: j.runAt,
          deadline: j.deadline,
        })),
        unreadable: got.unreadable,
      },
      'claim reply',
    ).toEqual({
      ...want,
      // The header as the record format carries it (the model's own object may spell a default out).
      jobs: want.jobs.map((j) => ({ ...j, header: decodeRecord(encodeRecord(j.header)).header })),
      unreadable: [],
    });
  }
}

export class PauseCommand extends Base {
  protected describe(): string {
    return 'pause()';
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    this.resolved = `now ${model.now}`;
    expect(await pause(real.client, [real.keys]), 'pause reply').toBe(model.pause());
    expect(await isPaused(real.client, [real.keys]), 'isPaused after pause').toBe(true);
  }
}

export class ResumeCommand extends Base {
  protected describe(): string {
    return 'resume()';
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    this.resolved = `now ${model.now}`;
    expect(await resume(real.client, [real.keys]), 'resume reply').toBe(model.resume());
    expect(await isPaused(real.client, [real.keys]), 'isPaused after resume').toBe(false);
  }
}

/** What an ack-only call sends besides the acks (a claim of none). */
const ACK_SETTINGS: AckSettings = {
  strategy: 'zpopmin',
  leaseMs: 1_000,
  holder: 1,
  deadMaxCount: 100_000,
  deadMaxAgeMs: 0,
  rate: { max: 0, perMs: 0 },
  eventsCap: EVENTS_OFF,
  zmscore: true,
  layout: ZSET_LAYOUT,
};

export class AckCommand extends Base {
  constructor(
    private readonly pick: number,
    private readonly withResult: boolean,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.handles.length > 0;
  }
  protected describe(): string {
    return `ack(lease #${this.pick} from newest${this.withResult ? ', with a result' : ''})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const handle = pickHandle(model, this.pick);
    this.resolved = `${handle.member} known deadline ${handle.knownDeadline}, now ${model.now}`;
    const result = this.withResult ? `result-${++real.serial}` : undefined;
    const got = await realOutcome(
      ack(
        real.client,
        real.keys,
        {
          member: handle.member,
          knownDeadline: handle.knownDeadline,
          hadError: handle.hadError,
          progressed: handle.progressed,
          ...(result !== undefined && { result: Buffer.from(result) }),
        },
        ACK_SETTINGS,
      ),
    );
    expect(got, 'ack outcome').toEqual(modelOutcome(() => model.ack(handle, result)));
  }
}

export class FailCommand extends Base {
  constructor(
    private readonly pick: number,
    private readonly delay: number | null,
    private readonly dead: Retention,
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
    this.resolved = `${handle.member}, now ${model.now}`;
    const error = { name: 'Error', message: `attempt by ${handle.token} failed` };
    const got = await realOutcome(
      fail(real.client, real.keys, {
        member: handle.member,
        retryDelayMs: this.delay,
        error,
        deadMaxCount: this.dead.count,
        deadMaxAgeMs: this.dead.ageMs,
        eventsCap: EVENTS_OFF,
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
    this.resolved = `${handles.map((h) => h.member).join(' ')}, now ${model.now}`;
    const got = await extend(
      real.client,
      real.keys,
      this.leaseMs,
      handles.map((h) => h.member),
      true,
    );
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

/** Move the clock exactly to a lease's deadline (+ extra): the fencing boundary. */
export class AdvancePastLeaseCommand extends Base {
  constructor(
    private readonly pick: number,
    private readonly extra: number,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.leaseSet().length > 0;
  }
  protected describe(): string {
    return `advance to the deadline of lease #${this.pick} + ${this.extra}`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const leases = model.leaseSet();
    const [member, deadline] = leases[this.pick % leases.length]!;
    this.resolved = `${member} deadline ${deadline}, now ${model.now}`;
    await setClock(model, real, deadline + this.extra);
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
    return [...model.jobs.values()].some((j) => j.state === 'waiting');
  }
  protected describe(): string {
    return `advance to the due time of waiting job #${this.pick} ${this.offset >= 0 ? '+' : ''}${this.offset}`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const waiting = [...model.jobs].filter(([, j]) => j.state === 'waiting');
    const [id, job] = waiting[this.pick % waiting.length]!;
    this.resolved = `${id} due ${job.at}, now ${model.now}`;
    await setClock(model, real, job.at + this.offset);
  }
}

export class ReapCommand extends Base {
  constructor(
    private readonly limit: number,
    private readonly dead: Retention,
  ) {
    super();
  }
  protected describe(): string {
    return `reap(limit ${this.limit}, dead ${JSON.stringify(this.dead)})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    this.resolved = `now ${model.now}`;
    const got = await reap(real.client, real.keys, {
      limit: this.limit,
      deadMaxCount: this.dead.count,
      deadMaxAgeMs: this.dead.ageMs,
      eventsCap: EVENTS_OFF,
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
    this.resolved = `${handle.member}, now ${model.now}`;
    const json = JSON.stringify({ pct: this.value });
    const got = await realOutcome(
      progress(real.client, real.keys, { member: handle.member, json, capBytes: PROGRESS_CAP }),
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
    this.resolved = `${handle.member}, now ${model.now}`;
    const got = await release(real.client, real.keys, {
      member: handle.member,
      delayMs: this.delay,
      eventsCap: EVENTS_OFF,
      layout: ZSET_LAYOUT,
    });
    expect(got, 'release reply').toBe(model.release(handle, this.delay));
  }
}

export class TrimCommand extends Base {
  constructor(
    private readonly completed: Retention,
    private readonly cancelled: Retention,
    private readonly dead: Retention,
  ) {
    super();
  }
  protected describe(): string {
    return `trim(completed ${JSON.stringify(this.completed)}, cancelled ${JSON.stringify(this.cancelled)}, dead ${JSON.stringify(this.dead)})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    this.resolved = `now ${model.now}`;
    const bounds = { completed: this.completed, cancelled: this.cancelled, dead: this.dead };
    const got = await trim(real.client, real.keys, { ...bounds, workerMaxAgeMs: 0 });
    expect(got, 'trim reply').toEqual(model.trim(bounds));
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
    const at = resolveWhen(this.when, model.now);
    this.resolved = `now ${model.now}`;
    const got = await reschedule(real.client, real.keys, {
      id,
      when: { at },
      eventsCap: EVENTS_OFF,
      layout: ZSET_LAYOUT,
    });
    expect(got, 'reschedule reply').toBe(model.reschedule(id, at));
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
      ? `dead.retry(oldest, batch ${this.batch})`
      : `dead.retry(${JSON.stringify(ID_POOL[this.id])})`;
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    const id = this.id === null ? null : ID_POOL[this.id]!;
    const batch = id === null ? this.batch : 1;
    this.resolved = `now ${model.now}`;
    const got = await deadRetry(real.client, real.keys, {
      id,
      batch,
      eventsCap: EVENTS_OFF,
      layout: ZSET_LAYOUT,
    });
    expect(got, 'dead.retry reply').toBe(model.deadRetry(id, batch));
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
    this.resolved = `now ${model.now}`;
    const got = await getJob(real.client, real.keys, id, ZSET_LAYOUT);
    const job = model.jobs.get(id);
    const want = model.get(id);
    expect(
      got && {
        state: got.state,
        score: got.score,
        member: got.member,
        lastError: got.lastError,
        progress: got.progress,
        holder: got.holder,
        record: shown(got.record),
      },
      'get reply',
    ).toEqual(want && job && { ...want, holder: null, record: shown(expectedRecord(job)) });
  }
}

export class CountsCommand extends Base {
  protected describe(): string {
    return 'counts()';
  }
  protected async apply(model: Model, real: Real): Promise<void> {
    this.resolved = `now ${model.now}`;
    expect(await counts(real.client, real.keys, ZSET_LAYOUT), 'counts reply').toEqual(model.counts());
  }
}

const addArgArb = (replace: fc.Arbitrary<boolean>): fc.Arbitrary<AddArg> =>
  fc.record({
    id: idArb,
    when: whenArb,
    attempts: fc.integer({ min: 1, max: 3 }),
    backoff: backoffArb,
    priority: priorityArb,
    replace,
  });

/** Every command, weighted so jobs are added and claimed often enough to reach deep states. */
export const commandArbs: Array<fc.Arbitrary<Cmd>> = [
  fc.array(addArgArb(fc.boolean()), { minLength: 1, maxLength: 3 }).map((jobs) => new AddCommand(jobs)),
  // Debounce: replace one id, whatever state it is in.
  addArgArb(fc.constant(true)).map((job) => new AddCommand([job])),
  addArgArb(fc.constant(false)).map((job) => new AddCommand([job])),
  idArb.map((id) => new CancelCommand(id)),
  ...[0, 1, 2].map(() =>
    fc
      .tuple(
        fc.integer({ min: 0, max: 3 }),
        leaseArb,
        fc.nat({ max: HOLDERS.length - 1 }),
        fc.constantFrom<Strategy>('zpopmin', 'range'),
        deadArb,
      )
      .map(
        ([limit, lease, holder, strategy, dead]) => new ClaimCommand(limit, lease, holder, strategy, dead),
      ),
  ),
  fc.tuple(handlePickArb, fc.boolean()).map(([pick, withResult]) => new AckCommand(pick, withResult)),
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
    .tuple(retentionArb, retentionArb, retentionArb)
    .map(([completed, cancelled, dead]) => new TrimCommand(completed, cancelled, dead)),
  fc.tuple(idArb, whenArb).map(([id, when]) => new RescheduleCommand(id, when)),
  fc
    .tuple(fc.option(idArb, { nil: null }), fc.integer({ min: 1, max: 3 }))
    .map(([id, batch]) => new DeadRetryCommand(id, batch)),
  idArb.map((id) => new DeadRemoveCommand(id)),
  idArb.map((id) => new GetCommand(id)),
  fc.constant(new CountsCommand()),
  // Pause once, resume twice: the queue is paused about a third of the time, so claims still
  // reach deep states, and claims against a paused queue (and their reaping) come often.
  fc.constant(new PauseCommand()),
  fc.constant(new ResumeCommand()),
  fc.constant(new ResumeCommand()),
];
