/**
 * fast-check commands for the model-based test: each runs one real operation (src/operations/*,
 * so the shipped Lua scripts) and the same operation on the model, compares what both returned,
 * then compares the queue's state in Redis with the model's (checkState).
 */
import { performance } from 'node:perf_hooks';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import { add } from '../../src/operations/add.js';
import { priorityMember } from '../../src/members/priority.js';
import { claim } from '../../src/operations/claim.js';
import { extend } from '../../src/operations/extend.js';
import { cancel } from '../../src/operations/cancel.js';
import { pause } from '../../src/operations/pause.js';
import { resume } from '../../src/operations/resume.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { CLAIM_AHEAD_MS } from '../../src/worker/start-gate.js';
import { decodeRecord, encodeRecord, finalRecord, NEW_JOB_HEADER } from '../../src/record/index.js';
import type { Strategy } from '../../src/redis/capabilities.js';
import type { QueueKeys } from '../../src/redis/keys.js';
import { CLOCK_KEY } from './clocked-client.js';
import { prioScore, type AddCode, type Handle, type HotModel, type ModelAdd } from './model.js';

/** The system under test for one run: a fresh queue on a real redis-server. */
export interface Real {
  /** Runs the scripts on the fake clock (clocked-client.ts). */
  client: Redis;
  /** A plain client for reading state and setting the clock. */
  plain: Redis;
  keys: QueueKeys;
  /** Makes every payload written unique, so a rewrite would show. */
  serial: number;
}

/** Ids with a colon, a pipe (the lease member's separator) and characters whose UTF-16 and UTF-8 orders differ. */
export const ID_POOL = ['a', 'b', 'c:1', 'd|2', 'x\uff5e', 'x\u{1f600}'] as const;
const PRIORITIES = [0, 0, -5, 3] as const;
const LEASE_MS = [50, 500] as const;
/** Failures only (negative cap): no routine events. */
const EVENTS_CAP = -1_000;

type Cmd = fc.AsyncCommand<HotModel, Real>;

/** The state of the queue in Redis, as the model predicts it. */
export async function checkState(model: HotModel, real: Real): Promise<void> {
  const { plain, keys } = real;
  const zset = async (key: string) => {
    const flat = await plain.zrange(key, 0, -1, 'WITHSCORES');
    const out: Array<[string, number]> = [];
    for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, Number(flat[i + 1])]);
    return out;
  };
  const jobs = [...model.jobs];
  const sorted = (entries: Array<[string, number]>) =>
    entries.sort(([ma, sa], [mb, sb]) => sa - sb || Buffer.compare(Buffer.from(ma), Buffer.from(mb)));
  const waiting = jobs.filter(([, j]) => j.state === 'waiting');
  expect(await zset(keys.waiting), 's').toEqual(
    sorted(waiting.filter(([, j]) => j.header.priority === 0).map(([id, j]) => [id, j.score])),
  );
  expect(await zset(keys.prioWaiting), 'p').toEqual(
    sorted(
      waiting
        .filter(([id, j]) => j.header.priority !== 0 && !model.promoted.has(id))
        .map(([id, j]) => [priorityMember(j.header.priority, id), j.score]),
    ),
  );
  expect(await zset(keys.prioReady), 'r').toEqual(
    sorted(
      waiting
        .filter(([id, j]) => j.header.priority !== 0 && model.promoted.has(id))
        .map(([id, j]) => [priorityMember(j.header.priority, id), prioScore(j.header.priority, j.score)]),
    ),
  );
  const inSet = (state: string): Array<[string, number]> =>
    sorted(jobs.filter(([, j]) => j.state === state).map(([id, j]) => [j.member ?? id, j.score]));
  expect(await zset(keys.leases), 'a').toEqual(inSet('active'));
  expect(await zset(keys.completed), 'c').toEqual(inSet('completed'));
  expect(await zset(keys.cancelled), 'x').toEqual(inSet('cancelled'));
  expect(await zset(keys.dead), 'd').toEqual(inSet('dead'));
  const stored = await plain.hgetallBuffer(keys.records);
  expect(Object.keys(stored).sort(), 'records').toEqual(jobs.map(([id]) => id).sort());
  for (const [id, job] of jobs) {
    const record = stored[id]!;
    if (job.state === 'completed' || job.state === 'cancelled') {
      // A final record keeps the job's claim block and max attempts (rec_final): these acks send
      // none, so the claim script makes it (claim-acks.lua), as cancel.lua does.
      const final = finalRecord({ ...NEW_JOB_HEADER, ...job.header }, job.state);
      expect(record.toString('hex'), `record of ${id}`).toBe(final.toString('hex'));
      continue;
    }
    const { header, payload } = decodeRecord(record);
    expect({ ...header, payload: payload.toString() }, `record of ${id}`).toEqual({
      ...NEW_JOB_HEADER,
      ...job.header,
      payload: job.payload,
    });
  }
  expect(await plain.exists(keys.paused), 'paused').toBe(model.paused ? 1 : 0);
  expect(Number((await plain.hget(keys.counters, 'added')) ?? 0), 'added').toBe(model.added);
}

abstract class Base implements Cmd {
  abstract toString(): string;
  check(): boolean {
    return true;
  }
  async run(model: HotModel, real: Real): Promise<void> {
    await this.apply(model, real);
    await checkState(model, real);
  }
  protected abstract apply(model: HotModel, real: Real): Promise<void>;
}

/** add: 1-3 jobs, each with an id from the pool, a due time relative to now, a priority, a mode. */
export class AddCommand extends Base {
  constructor(
    readonly jobs: ReadonlyArray<{
      id: number;
      offset: number;
      priority: number;
      attempts: number;
      mode: ModelAdd['mode'];
    }>,
  ) {
    super();
  }
  toString(): string {
    return `add(${this.jobs.map((j) => `${ID_POOL[j.id]}@${j.offset} p${j.priority} ${j.mode} m${j.attempts}`).join(', ')})`;
  }
  protected async apply(model: HotModel, real: Real): Promise<void> {
    const batch: ModelAdd[] = this.jobs.map((j) => ({
      id: ID_POOL[j.id]!,
      due: model.now + j.offset,
      priority: j.priority,
      maxAttempts: j.attempts,
      payload: `{"n":${real.serial++}}`,
      mode: j.mode,
    }));
    const expected = model.add(batch);
    // A call time in the future: the delay counted from the call (elapsed) is 0, so due = at.
    const outputs = await add(
      real.client,
      real.keys,
      batch.map((a) => ({
        id: a.id,
        when: { at: a.due },
        record: encodeRecord(
          { ...NEW_JOB_HEADER, maxAttempts: a.maxAttempts, priority: a.priority },
          Buffer.from(a.payload),
        ),
        priority: a.priority,
        mode: a.mode,
      })),
      EVENTS_CAP,
      ZSET_LAYOUT,
      performance.now() + 1e9,
    );
    expect(outputs.map(codeOf)).toEqual(expected.map((e) => [e.code, e.time]));
  }
}

function codeOf(out: Awaited<ReturnType<typeof add>>[number]): [AddCode, number] {
  if (out.created) return ['c', out.runAt];
  if (out.replaced) return ['R', out.runAt];
  if (out.taken) return ['T', out.runAt];
  const byState = { active: 'A', completed: 'C', cancelled: 'X', dead: 'D' } as const;
  return [out.state ? byState[out.state] : 'k', out.runAt];
}

/** claim: acks of some handles (stale ones too), then up to `limit` jobs. */
export class ClaimCommand extends Base {
  constructor(
    readonly limit: number,
    readonly leaseMs: number,
    readonly strategy: Strategy,
    readonly picks: readonly number[],
    /** Claim ahead (claim.lua's 'a<ms>' flag): also jobs due up to this long after now. */
    readonly aheadMs = 0,
  ) {
    super();
  }
  toString(): string {
    return `claim(${this.limit}, lease ${this.leaseMs}, ${this.strategy}, acks ${JSON.stringify(this.picks)}, ahead ${this.aheadMs})`;
  }
  protected async apply(model: HotModel, real: Real): Promise<void> {
    const handles = pick(model.handles, this.picks);
    const acks = handles.map((h) => ({ ...h }));
    const expected = model.claim(this.limit, this.leaseMs, 1, acks, this.aheadMs);
    const out = await claim(real.client, real.keys, {
      aheadMs: this.aheadMs,
      strategy: this.strategy,
      limit: this.limit,
      leaseMs: this.leaseMs,
      holder: 1,
      deadMaxCount: 0,
      deadMaxAgeMs: 0,
      rate: { max: 0, perMs: 0 },
      eventsCap: EVENTS_CAP,
      zmscore: true,
      layout: ZSET_LAYOUT,
      acks: acks.map((h) => ({
        member: h.member,
        knownDeadline: h.knownDeadline,
        hadError: h.hadError,
        progressed: false,
      })),
    });
    expect(
      out.acks.map((a) =>
        a.status === 'ok' ? 'OK' : a.status === 'already' ? 'ALREADY' : `LOST ${a.detail}`,
      ),
    ).toEqual(expected.acks);
    expect(out.paused).toBe(expected.paused);
    expect(out.jobs.map((j) => ({ id: j.id, member: j.member, due: j.runAt }))).toEqual(expected.jobs);
  }
}

/** extend: some handles to now + ms. */
export class ExtendCommand extends Base {
  constructor(
    readonly ms: number,
    readonly picks: readonly number[],
  ) {
    super();
  }
  toString(): string {
    return `extend(${this.ms}, ${JSON.stringify(this.picks)})`;
  }
  protected async apply(model: HotModel, real: Real): Promise<void> {
    const handles = pick(model.handles, this.picks);
    if (handles.length === 0) return;
    const expected = model.extend(this.ms, handles);
    const out = await extend(
      real.client,
      real.keys,
      this.ms,
      handles.map((h) => h.member),
      true,
    );
    expect(out.deadlines.map((d) => d ?? 0)).toEqual(expected);
  }
}

/** Move the clock forward. */
export class AdvanceCommand extends Base {
  constructor(readonly ms: number) {
    super();
  }
  toString(): string {
    return `advance(${this.ms})`;
  }
  protected async apply(model: HotModel, real: Real): Promise<void> {
    model.now += this.ms;
    await real.plain.set(CLOCK_KEY, model.now);
  }
}

export class PauseCommand extends Base {
  constructor(readonly on: boolean) {
    super();
  }
  toString(): string {
    return this.on ? 'pause' : 'resume';
  }
  protected async apply(model: HotModel, real: Real): Promise<void> {
    model.paused = this.on;
    await (this.on ? pause : resume)(real.client, [real.keys]);
  }
}

export class CancelCommand extends Base {
  constructor(readonly id: number) {
    super();
  }
  toString(): string {
    return `cancel(${ID_POOL[this.id]})`;
  }
  protected async apply(model: HotModel, real: Real): Promise<void> {
    const expected = model.cancel(ID_POOL[this.id]!);
    const out = await cancel(real.client, real.keys, {
      id: ID_POOL[this.id]!,
      eventsCap: EVENTS_CAP,
      layout: ZSET_LAYOUT,
    });
    expect(out).toEqual(expected);
  }
}

/** The handles at `picks` (indexes modulo the count; none when there are no handles). */
function pick(handles: readonly Handle[], picks: readonly number[]): Handle[] {
  if (handles.length === 0) return [];
  return picks.map((i) => handles[i % handles.length]!);
}

const idArb = fc.nat({ max: ID_POOL.length - 1 });
export const commandArbs: Array<fc.Arbitrary<Cmd>> = [
  fc
    .array(
      fc.record({
        id: idArb,
        // Edges: due now, 1 ms either side, and at and just past a claim ahead's reach.
        offset: fc.oneof(
          fc.constant(0),
          fc.integer({ min: -100, max: 100 }),
          fc.constantFrom(-1, 1, CLAIM_AHEAD_MS, CLAIM_AHEAD_MS + 1),
        ),
        priority: fc.constantFrom(...PRIORITIES),
        attempts: fc.constantFrom(1, 3),
        mode: fc.constantFrom('keep' as const, 'keep' as const, 'replace' as const, 'new' as const),
      }),
      { minLength: 1, maxLength: 3 },
    )
    .map((jobs) => new AddCommand(jobs)),
  fc
    .tuple(
      fc.integer({ min: 0, max: 3 }),
      fc.constantFrom(...LEASE_MS),
      fc.constantFrom<Strategy>('zpopmin', 'range'),
      fc.array(fc.nat(), { maxLength: 3 }),
      fc.constantFrom(0, 0, CLAIM_AHEAD_MS, 30),
    )
    .map(([limit, lease, strategy, picks, ahead]) => new ClaimCommand(limit, lease, strategy, picks, ahead)),
  fc
    .tuple(fc.constantFrom(...LEASE_MS), fc.array(fc.nat(), { minLength: 1, maxLength: 2 }))
    .map(([ms, picks]) => new ExtendCommand(ms, picks)),
  fc
    .oneof(fc.constantFrom(1, 49, 50, 51), fc.integer({ min: 1, max: 200 }))
    .map((ms) => new AdvanceCommand(ms)),
  fc.boolean().map((on) => new PauseCommand(on)),
  idArb.map((id) => new CancelCommand(id)),
];
