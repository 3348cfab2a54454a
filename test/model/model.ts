/**
 * A pure TypeScript model of one queue's job states, written from docs/PROTOCOL.md and the script
 * headers (not from the Lua bodies): what every operation returns and what the queue holds after
 * it. model.test.ts runs random sequences against it and against the real scripts, side by side.
 *
 * Orders follow Redis sorted sets: by score, then by member bytes (memcmp of the UTF-8 form).
 */
import type { ResolvedBackoff } from '../../src/backoff.js';
import { KEEP_CANCELLED } from '../../src/operations/trim.js';

/** Bookkeeping of one job, as the meta hash must hold it. */
export interface ModelMeta {
  a: number;
  m: number;
  r: number;
  b?: ResolvedBackoff;
  t?: string;
}

/** Where a job is; a job that is gone (acked, cancelled, removed, trimmed) is not in the model. */
export type ModelState = 'scheduled' | 'active' | 'dead' | 'completed';

/** One job the queue holds. */
export interface ModelJob {
  envelope: string;
  meta: ModelMeta;
  state: ModelState;
  /** Due time (scheduled), lease deadline (active), died at (dead), finished at (completed). */
  score: number;
  /** "token|startMs|workerId" while active. */
  lease?: string;
  /** The recorded last error, parsed. */
  error?: unknown;
  /** The running attempt's last progress value (JSON), written by its lease holder. */
  progress?: string;
}

/** A lease as its holder knows it: what a worker would pass to ack, fail, extend, release. */
export interface Handle {
  id: string;
  token: string;
  worker: string;
  /** The latest deadline the holder was told (claim, then each extend that kept it). */
  knownDeadline: number;
}

/** Why a token-checked operation was refused. */
export type LeaseLoss = 'not held' | 'expired';

/** A refusal the model predicts: the real call must throw DELAYQ_LEASE_LOST with this detail. */
export class ModelLeaseLost extends Error {
  constructor(readonly detail: LeaseLoss) {
    super(`lease lost: ${detail}`);
  }
}

/** Trimming of the dead set, as the worker passes it to fail, reap and claim. */
export interface DeadLimits {
  count: number;
  ageMs: number;
}

/** Completed-job retention, as the worker passes it to ack. */
export interface Retention {
  count: number;
  ageMs: number;
}

/** When a job is due: `delay` ms after now, or at an absolute time. */
export type ModelWhen = { delay: number } | { at: number };

/** What claim returns for one job. */
export interface ModelClaimed {
  id: string;
  token: string;
  envelope: string;
  meta: ModelMeta;
  runAt: number;
  claimedAt: number;
  deadline: number;
}

const REAP_ON_CLAIM = 100;
const TRIM_BATCH = 100;

function compareMembers(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The state of one queue. */
export class QueueModel {
  /** The server clock, epoch ms. */
  now: number;
  /** The last fencing token issued (0: none yet). */
  lastToken = 0;
  readonly jobs = new Map<string, ModelJob>();
  /** Ids of recently completed jobs -> when they completed (ack's `done` set). */
  readonly done = new Map<string, number>();
  /** Every lease ever handed out, stale ones included: a worker may still hold and use them. */
  readonly handles: Handle[] = [];
  /** Wake messages published since the last check, in order. */
  readonly wakes: string[] = [];
  /** The events stream: each entry's fields, in order (ids are the server's real clock, not modelled). */
  readonly events: string[][] = [];
  /** The rate limiter's log: token -> start time. */
  readonly limiter = new Map<string, number>();
  /** The events cap the next operation is called with (0: no events). */
  eventsCap = 0;
  /** When the queue was paused (the `paused` key's value), or null while it is not. */
  pausedAt: number | null = null;
  /** Ids of recently cancelled jobs -> when (cancel.lua's `cancelled` set). */
  readonly cancelled = new Map<string, number>();

  constructor(now: number) {
    this.now = now;
  }

  /** Ids in `state`, in sorted-set order. */
  inState(state: ModelState): Array<[string, ModelJob]> {
    return [...this.jobs]
      .filter(([, job]) => job.state === state)
      .sort(([ia, a], [ib, b]) => a.score - b.score || compareMembers(ia, ib));
  }

  private head(state: ModelState): number | undefined {
    return this.inState(state)[0]?.[1].score;
  }

  // A wake message goes out when the job just (re)scheduled at `due` is at the head of the schedule.
  private wakeIfHead(due: number): void {
    const head = this.head('scheduled');
    if (head !== undefined && head >= due) this.wakes.push(String(due));
  }

  private emit(kind: string, id: string, ...fields: Array<string | number>): void {
    if (this.eventsCap > 0) this.events.push(['type', kind, 'id', id, ...fields.map(String)]);
  }

  private checkLease(id: string, token: string): LeaseLoss | null {
    const job = this.jobs.get(id);
    if (!job?.lease || job.lease.split('|')[0] !== token) return 'not held';
    if (job.score <= this.now) return 'expired';
    return null;
  }

  private bury(id: string, limits: DeadLimits): void {
    const job = this.jobs.get(id)!;
    job.state = 'dead';
    job.score = this.now;
    delete job.lease;
    delete job.progress;
    this.emit('dead', id, 'at', this.now);
    if (limits.ageMs > 0) {
      const cutoff = this.now - limits.ageMs;
      const old = this.inState('dead').filter(([, j]) => j.score < cutoff);
      for (const [oldId] of old.slice(0, TRIM_BATCH)) this.jobs.delete(oldId);
    }
    if (limits.count > 0) {
      const dead = this.inState('dead');
      const excess = dead.length - limits.count;
      for (const [oldId] of dead.slice(0, Math.max(0, Math.min(excess, TRIM_BATCH)))) this.jobs.delete(oldId);
    }
  }

  private reapExpired(limit: number, limits: DeadLimits): { returned: number; buried: number } {
    let returned = 0;
    let buried = 0;
    const expired = this.inState('active')
      .filter(([, job]) => job.score <= this.now)
      .slice(0, limit);
    for (const [id, job] of expired) {
      job.error = {
        message: 'lease expired',
        name: 'LeaseExpired',
        at: this.now,
        attempt: job.meta.a,
        lease: job.lease ?? false,
      };
      this.emit('lease-lost', id, 'attempt', job.meta.a, 'at', this.now, 'lease', job.lease ?? '');
      delete job.lease;
      delete job.progress;
      if (job.meta.a >= job.meta.m) {
        this.bury(id, limits);
        buried++;
      } else {
        job.state = 'scheduled';
        job.score = this.now;
        job.meta.r = this.now;
        returned++;
      }
    }
    return { returned, buried };
  }

  private runAt(when: ModelWhen): number {
    return 'delay' in when ? this.now + when.delay : when.at;
  }

  /**
   * add.lua: one atomic batch, jobs in order. An existing id is left untouched, unless the job
   * asks to replace (mode r): a waiting job then takes the new envelope, max attempts, backoff and
   * due time, keeping the attempts it used; a running, dead or kept completed one is left alone
   * and its state answered. A recently completed id (`done`) writes nothing either way.
   */
  add(
    batch: ReadonlyArray<{
      id: string;
      when: ModelWhen;
      envelope: string;
      m: number;
      b?: ResolvedBackoff;
      replace?: boolean;
    }>,
  ): Array<{
    created: boolean;
    runAt: number;
    completedAt?: number;
    replaced?: boolean;
    state?: 'active' | 'dead' | 'completed';
  }> {
    let earliest: number | undefined;
    const out = batch.map((job) => {
      const runAt = this.runAt(job.when);
      const flag = job.replace ? { replaced: false } : {};
      const doneAt = this.done.get(job.id);
      if (doneAt !== undefined) return { created: false, runAt: doneAt, completedAt: doneAt, ...flag };
      const existing = this.jobs.get(job.id);
      if (existing && !job.replace) return { created: false, runAt: existing.meta.r };
      if (existing && existing.state !== 'scheduled') {
        const { state, score } = existing;
        return {
          created: false,
          replaced: false,
          state,
          runAt: score,
          ...(state === 'completed' && { completedAt: score }),
        };
      }
      const meta: ModelMeta = { a: existing?.meta.a ?? 0, m: job.m, r: runAt };
      if (job.b) meta.b = job.b;
      if (existing?.meta.t !== undefined) meta.t = existing.meta.t;
      // A replaced job keeps the error of its last failed attempt, like the attempts it used.
      const error = existing && 'error' in existing ? { error: existing.error } : {};
      this.jobs.set(job.id, { envelope: job.envelope, meta, state: 'scheduled', score: runAt, ...error });
      this.emit(existing ? 'replaced' : 'added', job.id, 'runAt', runAt, 'at', this.now);
      earliest = earliest === undefined ? runAt : Math.min(earliest, runAt);
      return existing ? { created: false, replaced: true, runAt } : { created: true, runAt, ...flag };
    });
    if (earliest !== undefined) this.wakeIfHead(earliest);
    return out;
  }

  /**
   * cancel.lua: a waiting or a running job. A running one's lease goes with it, and `C <member>`
   * tells its holder. The id is kept in `cancelled` (count and age bounded), as get() shows it.
   */
  cancel(id: string): boolean {
    const job = this.jobs.get(id);
    if (job?.state !== 'scheduled' && job?.state !== 'active') return false;
    this.jobs.delete(id);
    this.cancelled.set(id, this.now);
    for (const [old, at] of this.cancelled) {
      if (at < this.now - KEEP_CANCELLED.ageMs) this.cancelled.delete(old);
    }
    const excess = this.cancelled.size - KEEP_CANCELLED.count;
    for (const [old] of this.cancelledInOrder().slice(0, Math.max(0, excess))) this.cancelled.delete(old);
    if (job.state === 'active') this.wakes.push(`C ${job.lease!.split('|')[0]}|${id}`);
    this.emit('cancelled', id, 'at', this.now, 'was', job.state === 'active' ? 'running' : 'waiting');
    return true;
  }

  /** The `cancelled` ZSET: id -> cancelled at, in sorted-set order. */
  cancelledInOrder(): Array<[string, number]> {
    return [...this.cancelled].sort(([ia, a], [ib, b]) => a - b || compareMembers(ia, ib));
  }

  /** reschedule.lua: only a waiting job; the new due time, or null. */
  reschedule(id: string, when: ModelWhen): number | null {
    const job = this.jobs.get(id);
    if (job?.state !== 'scheduled') return null;
    const runAt = this.runAt(when);
    job.score = runAt;
    job.meta.r = runAt;
    this.wakeIfHead(runAt);
    this.emit('rescheduled', id, 'runAt', runAt, 'at', this.now);
    return runAt;
  }

  /**
   * claim-*.lua: reap expired leases, then lease up to `limit` due jobs (due <= now), earliest
   * first; with a rate limit, at most `rate.max` starts in any `rate.perMs` window (a start at t
   * counts while now - perMs < t).
   */
  claim(input: {
    limit: number;
    leaseMs: number;
    worker: string;
    dead: DeadLimits;
    rate: { max: number; perMs: number };
  }): {
    now: number;
    nextAt: number;
    jobs: ModelClaimed[];
    paused: boolean;
  } {
    this.reapExpired(REAP_ON_CLAIM, input.dead);
    // The pause gate: after reap-on-claim, before the rate limit; nothing taken, no time to look.
    if (this.pausedAt !== null) return { now: this.now, nextAt: -1, jobs: [], paused: true };
    let limit = input.limit;
    let windowReopens: number | undefined;
    if (input.rate.max > 0) {
      for (const [token, at] of this.limiter)
        if (at <= this.now - input.rate.perMs) this.limiter.delete(token);
      const allowed = input.rate.max - this.limiter.size;
      if (allowed < limit) {
        limit = Math.max(allowed, 0);
        // The oldest start leaves the window at oldest + perMs; the scripts look again 1 ms later.
        if (this.limiter.size > 0) windowReopens = Math.min(...this.limiter.values()) + input.rate.perMs + 1;
      }
    }
    const claimed: ModelClaimed[] = [];
    if (limit > 0) {
      const deadline = this.now + input.leaseMs;
      const due = this.inState('scheduled')
        .filter(([, job]) => job.score <= this.now)
        .slice(0, limit);
      for (const [id, job] of due) {
        const runAt = job.score;
        job.meta.a += 1;
        // The counter orders tokens; the claim time keeps them unique should a failover roll it back.
        const token = `${++this.lastToken}.${this.now}`;
        job.state = 'active';
        job.score = deadline;
        job.lease = `${token}|${this.now}|${input.worker}`;
        this.handles.push({ id, token, worker: input.worker, knownDeadline: deadline });
        claimed.push({
          id,
          token,
          envelope: job.envelope,
          meta: structuredClone(job.meta),
          runAt,
          claimedAt: this.now,
          deadline,
        });
        if (input.rate.max > 0) this.limiter.set(token, this.now);
        this.emit(
          'claimed',
          id,
          'attempt',
          job.meta.a,
          'runAt',
          runAt,
          'at',
          this.now,
          'worker',
          input.worker,
        );
      }
    }
    const scheduleHead = this.head('scheduled');
    const heads = [scheduleHead, this.head('active')].filter((h) => h !== undefined);
    let nextAt = heads.length > 0 ? Math.min(...heads) : -1;
    // Held back by the rate limit: the next look is when the window lets a due job start.
    if (windowReopens !== undefined && scheduleHead !== undefined && scheduleHead <= this.now)
      nextAt = windowReopens;
    return { now: this.now, nextAt, jobs: claimed, paused: false };
  }

  /** pause.lua: the first pause's time is kept; `P` wakes every worker. */
  pause(): { now: number; paused: boolean } {
    const paused = this.pausedAt === null;
    if (paused) this.pausedAt = this.now;
    this.wakes.push('P');
    return { now: this.now, paused };
  }

  /** resume.lua: `R <head>` wakes every worker, paused or not. */
  resume(): { now: number; resumed: boolean } {
    const resumed = this.pausedAt !== null;
    this.pausedAt = null;
    this.wakes.push(`R ${this.head('scheduled') ?? -1}`);
    return { now: this.now, resumed };
  }

  /** ack.lua: only the holder of a valid lease; a resent ack of a job it already finished is 'already'. */
  ack(handle: Handle, keep: Retention, remember: Retention): 'ok' | 'already' {
    const { id, token } = handle;
    const lost = this.checkLease(id, token);
    const job = this.jobs.get(id);
    if (lost) {
      if (
        lost === 'not held' &&
        handle.knownDeadline > this.now &&
        !job?.lease &&
        (!job || job.state === 'completed')
      ) {
        return 'already';
      }
      throw new ModelLeaseLost(lost);
    }
    if (!job) throw new Error('unreachable: a held lease without its job');
    const started = Number(job.lease!.split('|')[1]);
    this.emit('completed', id, 'at', this.now, 'runMs', this.now - started);
    if (remember.count > 0) this.rememberDone(id, remember);
    if (keep.count <= 0) {
      this.jobs.delete(id);
      return 'ok';
    }
    job.state = 'completed';
    job.score = this.now;
    delete job.lease;
    delete job.progress;
    delete job.error;
    // Keep the newest `count`, none older than `ageMs`.
    const completed = this.inState('completed');
    const tooOld = keep.ageMs > 0 ? completed.filter(([, j]) => j.score < this.now - keep.ageMs) : [];
    const drop = new Set(tooOld.slice(0, TRIM_BATCH).map(([oldId]) => oldId));
    const left = completed.filter(([oldId]) => !drop.has(oldId));
    const excess = left.length - keep.count;
    for (const [oldId] of left.slice(0, Math.max(0, Math.min(excess, TRIM_BATCH)))) drop.add(oldId);
    for (const oldId of drop) this.jobs.delete(oldId);
    return 'ok';
  }

  /** ack.lua's `done` set: record `id`, then drop ids older than `ageMs` and all but the newest `count`. */
  private rememberDone(id: string, remember: Retention): void {
    this.done.set(id, this.now);
    for (const [old, at] of this.done) if (at < this.now - remember.ageMs) this.done.delete(old);
    const oldestFirst = this.doneInOrder();
    for (const [old] of oldestFirst.slice(0, Math.max(0, oldestFirst.length - remember.count))) {
      this.done.delete(old);
    }
  }

  /** The `done` set as Redis orders it: by time, then by id. */
  doneInOrder(): Array<[string, number]> {
    return [...this.done].sort(([ia, a], [ib, b]) => a - b || compareMembers(ia, ib));
  }

  /** fail.lua: retry after `delay` ms while attempts are left (null: bury now), else bury. */
  fail(
    handle: Handle,
    delay: number | null,
    error: { message: string },
    dead: DeadLimits,
  ): { outcome: 'retry' | 'dead'; at: number } | { outcome: 'already' } {
    const { id, token } = handle;
    const lost = this.checkLease(id, token);
    const job = this.jobs.get(id);
    if (lost) {
      if (job && job.meta.t === token) return { outcome: 'already' };
      throw new ModelLeaseLost(lost);
    }
    if (!job) throw new Error('unreachable: a held lease without its job');
    delete job.lease;
    delete job.progress;
    job.error = error;
    job.meta.t = token;
    if (delay !== null && job.meta.a < job.meta.m) {
      const runAt = this.now + delay;
      job.state = 'scheduled';
      job.score = runAt;
      job.meta.r = runAt;
      this.wakeIfHead(runAt);
      this.emit(
        'failed',
        id,
        'attempt',
        job.meta.a,
        'retryAt',
        runAt,
        'at',
        this.now,
        'reason',
        error.message.slice(0, 200),
      );
      return { outcome: 'retry', at: runAt };
    }
    this.emit(
      'failed',
      id,
      'attempt',
      job.meta.a,
      'retryAt',
      -1,
      'at',
      this.now,
      'reason',
      error.message.slice(0, 200),
    );
    this.bury(id, dead);
    return { outcome: 'dead', at: this.now };
  }

  /** extend.lua: per handle, the new deadline (never shortened) or null when its lease is lost. */
  extend(leaseMs: number, handles: readonly Handle[]): { now: number; deadlines: Array<number | null> } {
    const deadlines = handles.map((handle) => {
      if (this.checkLease(handle.id, handle.token)) return null;
      const job = this.jobs.get(handle.id)!;
      job.score = Math.max(job.score, this.now + leaseMs);
      handle.knownDeadline = job.score;
      return job.score;
    });
    return { now: this.now, deadlines };
  }

  /** reap.lua. */
  reap(limit: number, dead: DeadLimits): { returned: number; buried: number; nextDeadline: number } {
    const { returned, buried } = this.reapExpired(limit, dead);
    if (returned > 0) this.wakeIfHead(this.now);
    return { returned, buried, nextDeadline: this.head('active') ?? -1 };
  }

  /** progress.lua: only the holder of a valid lease writes the value. */
  progress(handle: Handle, json: string): void {
    const lost = this.checkLease(handle.id, handle.token);
    if (lost) throw new ModelLeaseLost(lost);
    this.jobs.get(handle.id)!.progress = json;
  }

  /** release.lua: back to the schedule after `delay`, the attempt not charged. */
  release(handle: Handle, delay: number): boolean {
    if (this.checkLease(handle.id, handle.token)) return false;
    const job = this.jobs.get(handle.id)!;
    delete job.lease;
    delete job.progress;
    if (job.meta.a > 0) job.meta.a -= 1;
    job.state = 'scheduled';
    job.score = this.now + delay;
    job.meta.r = job.score;
    this.wakeIfHead(job.score);
    this.emit('released', handle.id, 'runAt', job.score, 'at', this.now);
    return true;
  }

  /** dead-retry.lua: one dead job, or the `batch` oldest; due now, attempts reset, last error kept. */
  deadRetry(id: string | null, batch: number): number {
    const ids =
      id !== null
        ? [id]
        : this.inState('dead')
            .slice(0, batch)
            .map(([i]) => i);
    let moved = 0;
    for (const each of ids) {
      const job = this.jobs.get(each);
      if (job?.state !== 'dead') continue;
      job.meta.a = 0;
      job.meta.r = this.now;
      delete job.meta.t;
      job.state = 'scheduled';
      job.score = this.now;
      this.emit('retried', each, 'runAt', this.now, 'at', this.now);
      moved++;
    }
    if (moved > 0) this.wakeIfHead(this.now);
    return moved;
  }

  /** dead-remove.lua. */
  deadRemove(id: string): boolean {
    if (this.jobs.get(id)?.state !== 'dead') return false;
    this.jobs.delete(id);
    return true;
  }

  /** get.lua, as getJob parses it. */
  get(id: string): {
    state: ModelState | 'cancelled';
    envelope: string;
    meta: ModelMeta;
    score: number;
    lease: { token: string; startedAt: number; workerId: string } | null;
    lastError: unknown;
    progress: string | null;
  } | null {
    const job = this.jobs.get(id);
    if (!job) {
      const at = this.cancelled.get(id);
      if (at === undefined) return null;
      const blank = { a: 0, m: 0 } as ModelMeta;
      return {
        state: 'cancelled',
        envelope: '',
        meta: blank,
        score: at,
        lease: null,
        lastError: null,
        progress: null,
      };
    }
    let lease = null;
    if (job.lease) {
      const [token = '', started = '0', ...worker] = job.lease.split('|');
      lease = { token, startedAt: Number(started), workerId: worker.join('|') };
    }
    return {
      state: job.state,
      envelope: job.envelope,
      meta: structuredClone(job.meta),
      score: job.score,
      lease,
      lastError: job.error ?? null,
      progress: job.progress ?? null,
    };
  }

  /** counts.lua. */
  counts(): { scheduled: number; due: number; active: number; dead: number; now: number; nextDue: number } {
    const scheduled = this.inState('scheduled');
    return {
      scheduled: scheduled.length,
      due: scheduled.filter(([, job]) => job.score <= this.now).length,
      active: this.inState('active').length,
      dead: this.inState('dead').length,
      now: this.now,
      nextDue: scheduled[0]?.[1].score ?? -1,
    };
  }
}
