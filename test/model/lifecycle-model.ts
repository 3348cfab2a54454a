/**
 * A pure TypeScript model of one queue's job lifecycle in layout 2 (docs/ARCHITECTURE.md §3,
 * §4), written from the design and the script headers: what every operation returns and what the
 * queue holds after it. lifecycle.test.ts runs random sequences against it and against the real
 * scripts, side by side. (model.ts models the hot path: add modes, ack + claim in one call.)
 *
 * Orders follow Redis sorted sets: by score, then by member bytes (memcmp of the UTF-8 form).
 */
import { leaseMember, leaseToken, parseLeaseMember } from '../../src/members/lease.js';
import { priorityMember } from '../../src/members/priority.js';
import { recreatedClaims } from './model.js';
import { NEW_JOB_HEADER, type RecordHeader } from '../../src/record/index.js';
import type { ResolvedBackoff } from '../../src/backoff.js';

/** Where a job is. A job whose id was trimmed (or never added) is not in the model. */
export type ModelState = 'waiting' | 'active' | 'dead' | 'completed' | 'cancelled';

/** A header the model can change in place. */
export type Header = { -readonly [K in keyof RecordHeader]: RecordHeader[K] };

/** One job the queue holds (its record in `j`, and its entry in one set). */
export interface ModelJob {
  state: ModelState;
  /** The live record's header and payload (waiting, active, dead). Final records keep neither. */
  header: Header;
  payload: string;
  /** Waiting: due ms. Dead, completed, cancelled: when it got there. */
  at: number;
  /** Active: the lease member and its deadline. */
  member?: string;
  deadline?: number;
  /** Completed: the result bytes kept in the completed record. */
  result?: string;
  /** The job's last error as `e` holds it (cjson's object, parsed). */
  error?: Record<string, unknown>;
  /** The running attempt's last progress value, written by its holder. */
  progress?: string;
}

/** A lease as its holder knows it: what a worker passes to ack, fail, extend, release, progress. */
export interface Handle {
  id: string;
  member: string;
  token: string;
  /** The latest deadline the holder was told (claim, then each extend that kept it). */
  knownDeadline: number;
  /** The claimed record had the E flag (the worker's ack says so, and the ack deletes the error). */
  hadError: boolean;
  /** This holder reported progress (the ack deletes it). */
  progressed: boolean;
}

/** Why a lease-checked operation was refused. */
export type LeaseLoss = 'not held' | 'expired' | 'cancelled';

/** A refusal the model predicts: the real call must throw DELAYQ_LEASE_LOST with this detail. */
export class ModelLeaseLost extends Error {
  constructor(readonly detail: LeaseLoss) {
    super(`lease lost: ${detail}`);
  }
}

/** A bound on a set of finished jobs (0: no bound of that kind). */
export interface Retention {
  count: number;
  ageMs: number;
}

/** One job of an add: an absolute due time (the tests never use delays: the script counts a delay from a monotonic clock the model cannot see). */
export interface ModelAddJob {
  id: string;
  at: number;
  payload: string;
  maxAttempts: number;
  backoff?: ResolvedBackoff;
  priority: number;
  replace: boolean;
}

/** What add answers per job (src/operations/add.ts AddOutput). */
export interface ModelAddOutput {
  created: boolean;
  runAt: number;
  replaced?: boolean;
  state?: 'active' | 'dead' | 'completed' | 'cancelled';
  completedAt?: number;
}

/** What claim returns for one job. */
export interface ModelClaimed {
  id: string;
  member: string;
  header: Header;
  payload: string;
  runAt: number;
  deadline: number;
}

/** The claim's inputs the model needs. */
export interface ModelClaimInput {
  limit: number;
  leaseMs: number;
  holder: number;
  /** The zpopmin strategy (a claim of one pops the head); range reads first. */
  pop: boolean;
  dead: Retention;
}

const REAP_ON_CLAIM = 100;
const DEAD_TRIM_BATCH = 100;
const MAX_CLAIMS = 65535;
const TWO42 = 2 ** 42;
const PRIO_BASE = 1024;

function compareMembers(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** A sorted set's order: by score, then member bytes. */
export function zsetOrder<T>(entries: Array<[string, number, T?]>): Array<[string, number, T?]> {
  return entries.sort(([ma, a], [mb, b]) => a - b || compareMembers(ma, mb));
}

/** The state of one queue. */
export class LifecycleModel {
  /** The server clock, epoch ms. */
  now: number;
  readonly jobs = new Map<string, ModelJob>();
  /** Every lease ever handed out, stale ones included: a worker may still hold and use them. */
  readonly handles: Handle[] = [];
  /** Control messages published since the last check (P, R <head>, C <member>), in order. */
  readonly wakes: string[] = [];
  /** The counters hash `n`. */
  readonly counters = new Map<string, number>();
  /** When the queue was paused (the `z` key's value), or null while it is not. */
  pausedAt: number | null = null;

  constructor(now: number) {
    this.now = now;
  }

  private count(name: string, by = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + by);
  }

  private inState(state: ModelState): Array<[string, ModelJob]> {
    return [...this.jobs].filter(([, job]) => job.state === state);
  }

  /** The default class's waiting set `s`: id -> due. */
  waitingSet(): Array<[string, number]> {
    return zsetOrder(
      this.inState('waiting')
        .filter(([, j]) => j.header.priority === 0)
        .map(([id, j]): [string, number] => [id, j.at]),
    ) as Array<[string, number]>;
  }

  /** Prioritized waiting jobs: `p` holds those not promoted yet, `r` the promoted ones. */
  readonly promoted = new Set<string>();

  /** `p`: "<prio>:<id>" -> due, jobs not yet promoted. */
  prioWaitingSet(): Array<[string, number]> {
    return zsetOrder(
      this.inState('waiting')
        .filter(([id, j]) => j.header.priority !== 0 && !this.promoted.has(id))
        .map(([id, j]): [string, number] => [priorityMember(j.header.priority, id), j.at]),
    ) as Array<[string, number]>;
  }

  /** `r`: "<prio>:<id>" -> (prio + 1024) * 2^42 + due, promoted (due) prioritized jobs. */
  prioReadySet(): Array<[string, number]> {
    return zsetOrder(
      this.inState('waiting')
        .filter(([id, j]) => j.header.priority !== 0 && this.promoted.has(id))
        .map(([id, j]): [string, number] => [
          priorityMember(j.header.priority, id),
          (j.header.priority + PRIO_BASE) * TWO42 + j.at,
        ]),
    ) as Array<[string, number]>;
  }

  /** `a`: lease member -> deadline. */
  leaseSet(): Array<[string, number]> {
    return zsetOrder(
      this.inState('active').map(([, j]): [string, number] => [j.member!, j.deadline!]),
    ) as Array<[string, number]>;
  }

  /** `d`, `c` or `x`: id -> when. */
  finishedSet(state: 'dead' | 'completed' | 'cancelled'): Array<[string, number]> {
    return zsetOrder(this.inState(state).map(([id, j]): [string, number] => [id, j.at])) as Array<
      [string, number]
    >;
  }

  /** Put job `id` (its header says the class) back in waiting, due at `due`. */
  private place(id: string, job: ModelJob, due: number): void {
    job.state = 'waiting';
    job.at = due;
    delete job.member;
    delete job.deadline;
    // A prioritized job already due goes straight to r (place.lua); otherwise p until a claim promotes it.
    if (job.header.priority !== 0 && due <= this.now) this.promoted.add(id);
    else this.promoted.delete(id);
  }

  private endLease(job: ModelJob): void {
    delete job.member;
    delete job.deadline;
    delete job.progress;
  }

  private leaseLost(member: string, id: string): LeaseLoss | null {
    const job = this.jobs.get(id);
    if (job?.state === 'active' && job.member === member) return job.deadline! > this.now ? null : 'expired';
    if (this.jobs.get(id)?.state === 'cancelled') return 'cancelled';
    return 'not held';
  }

  private trimDead(limits: Retention): void {
    const drop = (ids: string[]): void => {
      for (const id of ids) this.jobs.delete(id);
    };
    if (limits.ageMs > 0) {
      drop(
        this.finishedSet('dead')
          .filter(([, at]) => at < this.now - limits.ageMs)
          .slice(0, DEAD_TRIM_BATCH)
          .map(([id]) => id),
      );
    }
    if (limits.count > 0) {
      const dead = this.finishedSet('dead');
      const excess = dead.length - limits.count;
      if (excess > 0) drop(dead.slice(0, Math.min(excess, DEAD_TRIM_BATCH)).map(([id]) => id));
    }
  }

  private bury(id: string, job: ModelJob, limits: Retention): void {
    job.state = 'dead';
    job.at = this.now;
    this.promoted.delete(id);
    this.count('dead');
    this.trimDead(limits);
  }

  private reapExpired(max: number, limits: Retention): { returned: number; buried: number } {
    const expired = this.leaseSet()
      .filter(([, deadline]) => deadline <= this.now)
      .slice(0, max);
    let returned = 0;
    let buried = 0;
    for (const [member] of expired) {
      const { id, token } = parseLeaseMember(member);
      const job = this.jobs.get(id)!;
      this.endLease(job);
      job.error = {
        name: 'LeaseExpired',
        message: 'lease expired',
        at: this.now,
        attempt: job.header.attempts,
        token,
      };
      job.header.hasError = true;
      if (job.header.attempts >= job.header.maxAttempts) {
        this.bury(id, job, limits);
        buried++;
      } else {
        this.place(id, job, this.now);
        returned++;
      }
    }
    if (expired.length > 0) this.count('reaped', expired.length);
    return { returned, buried };
  }

  /** add.lua: one atomic batch, jobs in order (docs/ARCHITECTURE.md §4.1). */
  add(batch: readonly ModelAddJob[]): ModelAddOutput[] {
    let created = 0;
    const writtenHere = new Set<string>();
    const out = batch.map((input): ModelAddOutput => {
      const flag = input.replace ? { replaced: false } : {};
      const header: Header = {
        ...NEW_JOB_HEADER,
        maxAttempts: input.maxAttempts,
        priority: input.priority,
        ...(input.backoff && { backoff: input.backoff }),
      };
      const existing = this.jobs.get(input.id);
      // A replace of a completed job adds it again, as if its id were free.
      if (!existing || (existing.state === 'completed' && input.replace && !writtenHere.has(input.id))) {
        // Created again over a completed record: claims go on from the old job's
        // (add-existing.lua, add_fence_recreated).
        if (existing) header.claims = recreatedClaims(existing.header);
        const job: ModelJob = { state: 'waiting', header, payload: input.payload, at: input.at };
        this.jobs.set(input.id, job);
        this.place(input.id, job, input.at);
        writtenHere.add(input.id);
        created++;
        return { created: true, runAt: input.at, ...flag };
      }
      if (writtenHere.has(input.id) && !input.replace) return { created: false, runAt: existing.at };
      switch (existing.state) {
        case 'completed':
          return {
            created: false,
            state: 'completed',
            runAt: existing.at,
            ...flag,
            completedAt: existing.at,
          };
        case 'cancelled':
          return { created: false, state: 'cancelled', runAt: existing.at, ...flag };
        case 'dead':
          return { created: false, state: 'dead', runAt: existing.at, ...flag };
        case 'active':
          return { created: false, state: 'active', runAt: existing.deadline!, ...flag };
        case 'waiting':
          break;
      }
      if (!input.replace) return { created: false, runAt: existing.at };
      // Replace: the new record, carrying the attempts used (the claim block) and the error flag.
      const old = existing.header;
      const replaced: Header = {
        ...header,
        ...(old.claims > 0 && {
          attempts: old.attempts,
          claims: old.claims,
          claimedAt: old.claimedAt,
          runDue: old.runDue,
          holder: old.holder,
        }),
        hasError: old.hasError,
      };
      existing.header = replaced;
      existing.payload = input.payload;
      this.place(input.id, existing, input.at);
      writtenHere.add(input.id);
      return { created: false, replaced: true, runAt: input.at };
    });
    if (created > 0) this.count('added', created);
    return out;
  }

  /** cancel.lua: a waiting or running job; null when there is nothing to cancel. */
  cancel(id: string): 'waiting' | 'running' | null {
    const job = this.jobs.get(id);
    if (job?.state !== 'waiting' && job?.state !== 'active') return null;
    const how = job.state === 'active' ? 'running' : 'waiting';
    if (how === 'running') this.wakes.push(`C ${job.member!}`);
    job.state = 'cancelled';
    job.at = this.now;
    this.promoted.delete(id);
    this.endLease(job);
    delete job.error;
    this.count('cancelled');
    return how;
  }

  /** claim.lua with no acks (docs/ARCHITECTURE.md §4.2 steps 2 to 5). */
  claim(input: ModelClaimInput): { now: number; nextAt: number; paused: boolean; jobs: ModelClaimed[] } {
    if (input.limit <= 0) return { now: this.now, nextAt: -1, paused: false, jobs: [] };
    if (this.pausedAt !== null) {
      const head = this.leaseSet()[0];
      if (head && head[1] <= this.now) this.reapExpired(REAP_ON_CLAIM, input.dead);
      return { now: this.now, nextAt: -1, paused: true, jobs: [] };
    }
    let nextAt = -1;
    const sooner = (at: number): void => {
      if (nextAt === -1 || at < nextAt) nextAt = at;
    };
    const jobs: ModelClaimed[] = [];
    const takeAndLease = (limit: number): void => {
      const special = this.prioWaitingSet().length + this.prioReadySet().length > 0;
      const taken: Array<[string, number]> = [];
      if (limit > 0) {
        const dues: Array<[string, number]> = [];
        const s = this.waitingSet();
        if (limit === 1 && !special && input.pop) {
          const head = s[0];
          if (head && head[1] <= this.now) dues.push(head);
          else if (head) sooner(head[1]);
        } else {
          for (const [id, due] of s.slice(0, limit + 1)) {
            if (due <= this.now && dues.length < limit) dues.push([id, due]);
            else {
              sooner(Math.max(due, this.now));
              break;
            }
          }
        }
        if (!special) taken.push(...dues);
        else {
          for (const [member, due] of this.prioWaitingSet()) {
            if (due > this.now) {
              sooner(due);
              break;
            }
            this.promoted.add(member.slice(member.indexOf(':') + 1));
          }
          const r = this.prioReadySet().slice(0, limit + 1);
          let di = 0;
          let ri = 0;
          while (taken.length < limit && (di < dues.length || ri < r.length)) {
            const dScore = di < dues.length ? PRIO_BASE * TWO42 + dues[di]![1] : undefined;
            const rScore = ri < r.length ? r[ri]![1] : undefined;
            if (rScore !== undefined && (dScore === undefined || rScore < dScore)) {
              const member = r[ri]![0];
              taken.push([member.slice(member.indexOf(':') + 1), rScore % TWO42]);
              ri++;
            } else {
              taken.push(dues[di]!);
              di++;
            }
          }
          if (ri < r.length || di < dues.length) sooner(this.now);
        }
      }
      const deadline = this.now + input.leaseMs;
      for (const [id, due] of taken) {
        const job = this.jobs.get(id)!;
        const claims = (job.header.claims % MAX_CLAIMS) + 1;
        job.header.attempts += 1;
        job.header.claims = claims;
        job.header.claimedAt = this.now;
        job.header.runDue = due;
        job.header.holder = input.holder;
        const token = leaseToken(claims, this.now);
        const member = leaseMember(token, id);
        job.state = 'active';
        job.member = member;
        job.deadline = deadline;
        this.promoted.delete(id);
        this.handles.push({
          id,
          member,
          token,
          knownDeadline: deadline,
          hadError: job.header.hasError,
          progressed: false,
        });
        jobs.push({ id, member, header: { ...job.header }, payload: job.payload, runAt: due, deadline });
      }
    };
    takeAndLease(input.limit);
    if (jobs.length < input.limit) {
      const head = this.leaseSet()[0];
      if (head && head[1] <= this.now) {
        const { returned } = this.reapExpired(REAP_ON_CLAIM, input.dead);
        if (returned > 0) {
          sooner(this.now);
          if (jobs.length < input.limit) takeAndLease(input.limit - jobs.length);
        }
        const after = this.leaseSet()[0];
        if (after) sooner(after[1]);
      } else if (head) sooner(head[1]);
    }
    return { now: this.now, nextAt, paused: false, jobs };
  }

  /** The acks of claim.lua (a claim of none): per handle 'ok', 'already', or the loss. */
  ack(handle: Handle, result: string | undefined): 'ok' | 'already' {
    const job = this.jobs.get(handle.id);
    const held = job?.state === 'active' && job.member === handle.member;
    if (held && job.deadline! > this.now) {
      this.endLease(job);
      if (handle.hadError) delete job.error;
      job.state = 'completed';
      job.at = this.now;
      if (result !== undefined) job.result = result;
      return 'ok';
    }
    if (!held && handle.knownDeadline > this.now && job?.state === 'completed') return 'already';
    if (held) throw new ModelLeaseLost('expired');
    if (job?.state === 'cancelled') throw new ModelLeaseLost('cancelled');
    throw new ModelLeaseLost('not held');
  }

  /** fail.lua: retry after `delay` ms while attempts are left (null: bury now), else bury. */
  fail(
    handle: Handle,
    delay: number | null,
    error: { name: string; message: string },
    dead: Retention,
  ): { outcome: 'retry' | 'dead'; at: number } | { outcome: 'already' } {
    const lost = this.leaseLost(handle.member, handle.id);
    const job = this.jobs.get(handle.id);
    if (lost) {
      if (job?.error && job.error['token'] === handle.token && job.error['name'] !== 'LeaseExpired') {
        return { outcome: 'already' };
      }
      throw new ModelLeaseLost(lost);
    }
    const held = job!;
    this.endLease(held);
    held.error = { ...error, at: this.now, attempt: held.header.attempts, token: handle.token };
    held.header.hasError = true;
    if (delay !== null && held.header.attempts < held.header.maxAttempts) {
      const runAt = this.now + delay;
      this.place(handle.id, held, runAt);
      this.count('failed');
      return { outcome: 'retry', at: runAt };
    }
    this.bury(handle.id, held, dead);
    return { outcome: 'dead', at: this.now };
  }

  /** release.lua: back to waiting after `delay`, the attempt handed back. */
  release(handle: Handle, delay: number): boolean {
    if (this.leaseLost(handle.member, handle.id)) return false;
    const job = this.jobs.get(handle.id)!;
    this.endLease(job);
    if (job.header.attempts > 0) job.header.attempts -= 1;
    this.place(handle.id, job, this.now + delay);
    return true;
  }

  /** extend.lua: per handle, the new deadline (never shortened) or null when its lease is lost. */
  extend(leaseMs: number, handles: readonly Handle[]): { now: number; deadlines: Array<number | null> } {
    const deadlines = handles.map((handle) => {
      const job = this.jobs.get(handle.id);
      if (job?.state !== 'active' || job.member !== handle.member || job.deadline! <= this.now) return null;
      job.deadline = Math.max(job.deadline!, this.now + leaseMs);
      handle.knownDeadline = job.deadline;
      return job.deadline;
    });
    return { now: this.now, deadlines };
  }

  /** reap.lua. */
  reap(limit: number, dead: Retention): { returned: number; buried: number; nextDeadline: number } {
    const { returned, buried } = this.reapExpired(limit, dead);
    return { returned, buried, nextDeadline: this.leaseSet()[0]?.[1] ?? -1 };
  }

  /** progress.lua: only the holder of a valid lease writes the value. */
  progress(handle: Handle, json: string): void {
    const lost = this.leaseLost(handle.member, handle.id);
    if (lost) throw new ModelLeaseLost(lost);
    this.jobs.get(handle.id)!.progress = json;
    handle.progressed = true;
  }

  /** pause.lua: the first pause's time is kept; `P` goes out either way. */
  pause(): boolean {
    const paused = this.pausedAt === null;
    if (paused) this.pausedAt = this.now;
    this.wakes.push('P');
    return paused;
  }

  /** resume.lua: `R <head>`: the earliest of s's and p's heads, or now when r holds due jobs (-1: none). */
  resume(): boolean {
    const resumed = this.pausedAt !== null;
    this.pausedAt = null;
    const heads = [this.waitingSet()[0]?.[1], this.prioWaitingSet()[0]?.[1]].filter(
      (h): h is number => h !== undefined,
    );
    if (this.prioReadySet().length > 0) heads.push(this.now);
    this.wakes.push(`R ${heads.length > 0 ? Math.min(...heads) : -1}`);
    return resumed;
  }

  /** reschedule.lua: only a waiting job moves; the new due time, or null. */
  reschedule(id: string, at: number): number | null {
    const job = this.jobs.get(id);
    if (job?.state !== 'waiting') return null;
    this.place(id, job, at);
    return at;
  }

  /** dead-retry.lua: one dead job, or the `batch` oldest; due now, attempts reset, last error kept. */
  deadRetry(id: string | null, batch: number): number {
    const ids =
      id !== null
        ? [id]
        : this.finishedSet('dead')
            .slice(0, batch)
            .map(([each]) => each);
    let moved = 0;
    for (const each of ids) {
      const job = this.jobs.get(each);
      if (job?.state !== 'dead') continue;
      job.header.attempts = 0;
      this.place(each, job, this.now);
      moved++;
    }
    if (moved > 0) this.count('retried', moved);
    return moved;
  }

  /** dead-remove.lua. */
  deadRemove(id: string): boolean {
    if (this.jobs.get(id)?.state !== 'dead') return false;
    this.jobs.delete(id);
    return true;
  }

  /** get.lua, as getJob parses it: null for an id the queue does not hold. */
  get(id: string): {
    state: 'scheduled' | Exclude<ModelState, 'waiting'>;
    score: number;
    member: string | null;
    lastError: Record<string, unknown> | null;
    progress: string | null;
  } | null {
    const job = this.jobs.get(id);
    if (!job) return null;
    const live = job.state === 'waiting' || job.state === 'active' || job.state === 'dead';
    return {
      state: job.state === 'waiting' ? 'scheduled' : job.state,
      score: job.state === 'active' ? job.deadline! : job.at,
      member: job.state === 'active' ? job.member! : null,
      // A final record has no E flag, so get() shows no error for it.
      lastError: live && job.header.hasError ? (job.error ?? null) : null,
      progress: job.state === 'active' ? (job.progress ?? null) : null,
    };
  }

  /** counts.lua: next due is the earliest of s's and p's heads and the due of r's head (by score). */
  counts(): {
    scheduled: number;
    due: number;
    held: number;
    active: number;
    dead: number;
    completed: number;
    cancelled: number;
    waitingChildren: number;
    paused: boolean;
    now: number;
    nextDue: number;
    histogram: null;
  } {
    const s = this.waitingSet();
    const p = this.prioWaitingSet();
    const r = this.prioReadySet();
    const heads = [s[0]?.[1], p[0]?.[1], r[0] && r[0][1] % TWO42].filter((h): h is number => h !== undefined);
    return {
      scheduled: s.length + p.length + r.length,
      due:
        s.filter(([, due]) => due <= this.now).length +
        p.filter(([, due]) => due <= this.now).length +
        r.length,
      // No grouped jobs in this model: none held.
      held: 0,
      active: this.leaseSet().length,
      dead: this.finishedSet('dead').length,
      completed: this.finishedSet('completed').length,
      cancelled: this.finishedSet('cancelled').length,
      // No flows in this model: no parent waits for its children.
      waitingChildren: 0,
      paused: this.pausedAt !== null,
      now: this.now,
      nextDue: heads.length > 0 ? Math.min(...heads) : -1,
      histogram: null,
    };
  }

  /** trim.lua: completed, cancelled and dead sets within their bounds. */
  trim(bounds: { completed: Retention; cancelled: Retention; dead: Retention }): {
    completed: number;
    cancelled: number;
    dead: number;
    workers: number;
    logs: number;
  } {
    const expired = (state: 'completed' | 'cancelled' | 'dead', bound: Retention): string[] => {
      const set = this.finishedSet(state);
      let n = bound.ageMs > 0 ? set.filter(([, at]) => at < this.now - bound.ageMs).length : 0;
      if (bound.count > 0) n += Math.max(0, set.length - n - bound.count);
      return set.slice(0, n).map(([id]) => id);
    };
    // No command of the model logs (job.log): trim's log sweep never finds an entry to drop.
    const out = { completed: 0, cancelled: 0, dead: 0, workers: 0, logs: 0 };
    for (const state of ['completed', 'cancelled', 'dead'] as const) {
      const ids = expired(state, bounds[state]);
      for (const id of ids) this.jobs.delete(id);
      out[state] = ids.length;
    }
    return out;
  }
}
