/**
 * A pure TypeScript model of one queue's hot path in layout 2 (docs/ARCHITECTURE.md §3, §4.1,
 * §4.2, §4.3, §4.6), written from the design and the script headers, not from the Lua bodies:
 * where each job waits (its class: default `s`, prioritized `p` / `r`), its lease member and
 * deadline, its record header, and the final records (completed, cancelled, dead). model.test.ts
 * runs random sequences against it and against the shipped scripts, side by side.
 *
 * Orders follow Redis sorted sets: by score, then by member bytes.
 */
import { leaseMember, leaseToken } from '../../src/members/lease.js';
import { priorityMember } from '../../src/members/priority.js';

/** The claims a job created again over a completed record without a claim block starts from (add-existing.lua). */
export const RECREATED_CLAIMS = 32768;

/** The claims a job created again over the completed job of header `old` starts from. */
export function recreatedClaims(old: { claims: number }): number {
  return old.claims > 0 ? old.claims : RECREATED_CLAIMS;
}

/** The header fields the model tracks (the rest stay at their defaults). */
export interface ModelHeader {
  attempts: number;
  claims: number;
  claimedAt: number;
  runDue: number;
  holder: number;
  maxAttempts: number;
  priority: number;
  hasError: boolean;
}

export type ModelState = 'waiting' | 'active' | 'completed' | 'cancelled' | 'dead';

/** One job the queue holds. */
export interface ModelJob {
  state: ModelState;
  header: ModelHeader;
  payload: string;
  /** waiting: due; active: lease deadline; completed/cancelled/dead: when. */
  score: number;
  /** active: its lease member. */
  member?: string;
}

/** A lease as its holder knows it (stale ones included: a worker may still use them). */
export interface Handle {
  id: string;
  member: string;
  knownDeadline: number;
  hadError: boolean;
}

/** One job of an add. */
export interface ModelAdd {
  id: string;
  /** Absolute due time (the model adds with `at` or a delay of its own clock). */
  due: number;
  priority: number;
  maxAttempts: number;
  payload: string;
  mode: 'keep' | 'replace' | 'new';
}

export type AddCode = 'c' | 'k' | 'R' | 'A' | 'C' | 'X' | 'D' | 'T';

const TWO42 = 2 ** 42;
const REAP_ON_CLAIM = 100;

function bytesCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The score of a due prioritized job in r, and the default class's when merged with r. */
export function prioScore(priority: number, due: number): number {
  return (priority + 1024) * TWO42 + due;
}

/** The state of one queue. */
export class HotModel {
  readonly jobs = new Map<string, ModelJob>();
  readonly handles: Handle[] = [];
  paused = false;
  added = 0;

  constructor(public now: number) {}

  /** Jobs waiting in the default class, in s order. */
  waitingDefault(): Array<[string, ModelJob]> {
    return [...this.jobs]
      .filter(([, j]) => j.state === 'waiting' && j.header.priority === 0)
      .sort(([ia, a], [ib, b]) => a.score - b.score || bytesCompare(ia, ib));
  }

  /** Prioritized waiting jobs split as the scripts keep them: p (not due when placed) or r (due). */
  readonly promoted = new Set<string>();

  inState(state: ModelState): Array<[string, ModelJob]> {
    return [...this.jobs]
      .filter(([, j]) => j.state === state)
      .sort(([ia, a], [ib, b]) => a.score - b.score || bytesCompare(a.member ?? ia, b.member ?? ib));
  }

  /** Put a waiting job where its class says (prioritized: r when due now, else p). */
  private place(id: string, job: ModelJob, due: number): void {
    job.state = 'waiting';
    job.score = due;
    delete job.member;
    if (job.header.priority !== 0 && due <= this.now) this.promoted.add(id);
    else this.promoted.delete(id);
  }

  add(batch: readonly ModelAdd[]): Array<{ code: AddCode; time: number }> {
    const written = new Set<string>();
    return batch.map((a) => {
      const old = this.jobs.get(a.id);
      if (written.has(a.id) && a.mode !== 'replace') {
        return a.mode === 'new' ? { code: 'T' as const, time: -1 } : { code: 'k' as const, time: old!.score };
      }
      const header: ModelHeader = {
        attempts: 0,
        claims: 0,
        claimedAt: 0,
        runDue: 0,
        holder: 0,
        maxAttempts: a.maxAttempts,
        priority: a.priority,
        hasError: false,
      };
      // A replace of a completed job adds it again, as if its id were free.
      if (!old || (old.state === 'completed' && a.mode === 'replace')) {
        // Created again over a completed record: its claims go on from the old job's (every ack
        // keeps the claim block), so its lease tokens cannot repeat the old job's
        // (add-existing.lua, add_fence_recreated).
        if (old) header.claims = recreatedClaims(old.header);
        const job: ModelJob = { state: 'waiting', header, payload: a.payload, score: a.due };
        this.jobs.set(a.id, job);
        this.place(a.id, job, a.due);
        written.add(a.id);
        this.added++;
        return { code: 'c' as const, time: a.due };
      }
      if (old.state === 'completed') return { code: 'C' as const, time: old.score };
      if (old.state === 'cancelled') return { code: 'X' as const, time: old.score };
      if (old.state === 'dead') return { code: 'D' as const, time: old.score };
      if (old.state === 'active') return { code: 'A' as const, time: old.score };
      if (a.mode === 'new') {
        // Every add of the model carries a fresh payload: a generated id found is a collision.
        return { code: 'T' as const, time: -1 };
      }
      if (a.mode === 'keep') return { code: 'k' as const, time: old.score };
      // Replace: the new header and payload; the claim block and the error flag stay.
      const kept = old.header;
      old.header = {
        ...header,
        attempts: kept.attempts,
        claims: kept.claims,
        claimedAt: kept.claimedAt,
        runDue: kept.runDue,
        holder: kept.holder,
        hasError: kept.hasError,
      };
      old.payload = a.payload;
      this.place(a.id, old, a.due);
      written.add(a.id);
      return { code: 'R' as const, time: a.due };
    });
  }

  /** claim.lua: acks, then the gate, then take and lease; reap-on-claim when not full. */
  claim(
    limit: number,
    leaseMs: number,
    holder: number,
    acks: readonly Handle[],
    aheadMs = 0,
  ): { acks: string[]; paused: boolean; jobs: Array<{ id: string; member: string; due: number }> } {
    const outcomes: string[] = [];
    const applied = new Set<string>();
    for (const ack of acks) {
      const job = this.jobs.get(ack.id);
      const held = job?.state === 'active' && job.member === ack.member;
      if (applied.has(ack.member)) outcomes.push('ALREADY');
      else if (held && job.score > this.now) {
        applied.add(ack.member);
        job.state = 'completed';
        job.score = this.now;
        delete job.member;
        outcomes.push('OK');
      } else if (!held && ack.knownDeadline > this.now && job?.state === 'completed')
        outcomes.push('ALREADY');
      else if (held) outcomes.push('LOST expired');
      else if (job?.state === 'cancelled') outcomes.push('LOST cancelled');
      else outcomes.push('LOST not held');
    }
    const jobs: Array<{ id: string; member: string; due: number }> = [];
    if (limit <= 0) return { acks: outcomes, paused: false, jobs };
    if (this.paused) {
      if (this.inState('active').some(([, j]) => j.score <= this.now)) this.reap();
      return { acks: outcomes, paused: true, jobs };
    }
    this.take(limit, leaseMs, holder, jobs, aheadMs);
    if (jobs.length < limit) {
      const head = this.inState('active')[0];
      if (head && head[1].score <= this.now) {
        const returned = this.reap();
        if (returned > 0) this.take(limit - jobs.length, leaseMs, holder, jobs, aheadMs);
      }
    }
    return { acks: outcomes, paused: false, jobs };
  }

  /**
   * Jobs due by now (of the default class: by now + aheadMs, a claim ahead takes those too) in
   * claim order: lower priority first (the default class is 0), then due, then member.
   */
  private dueInOrder(aheadMs: number): Array<[string, ModelJob]> {
    // A prioritized job is promoted (and claimed) only once due by now; the default class ahead.
    const due = [...this.jobs].filter(
      ([, j]) => j.state === 'waiting' && j.score <= this.now + (j.header.priority === 0 ? aheadMs : 0),
    );
    // Promotion moves every due prioritized job to r before the merge.
    for (const [id, j] of due) if (j.header.priority !== 0) this.promoted.add(id);
    const key = ([id, j]: [string, ModelJob]): [number, string] =>
      j.header.priority === 0
        ? [prioScore(0, j.score), id]
        : [prioScore(j.header.priority, j.score), priorityMember(j.header.priority, id)];
    return due.sort((a, b) => {
      const [sa, ma] = key(a);
      const [sb, mb] = key(b);
      if (sa !== sb) return sa - sb;
      // Equal scores: the default class wins the merge (r is taken only when strictly lower).
      const da = a[1].header.priority === 0 ? 0 : 1;
      const db = b[1].header.priority === 0 ? 0 : 1;
      return da - db || bytesCompare(ma, mb);
    });
  }

  private take(
    limit: number,
    leaseMs: number,
    holder: number,
    out: Array<{ id: string; member: string; due: number }>,
    aheadMs: number,
  ): void {
    for (const [id, job] of this.dueInOrder(aheadMs).slice(0, limit)) {
      const h = job.header;
      h.attempts += 1;
      h.claims = (h.claims % 65535) + 1;
      h.claimedAt = this.now;
      h.runDue = job.score;
      h.holder = holder;
      const member = leaseMember(leaseToken(h.claims, this.now), id);
      const due = job.score;
      job.state = 'active';
      job.member = member;
      job.score = this.now + leaseMs;
      this.promoted.delete(id);
      this.handles.push({ id, member, knownDeadline: job.score, hadError: h.hasError });
      out.push({ id, member, due });
    }
  }

  /** reap-expired: back to waiting due now with the error flag, or dead once attempts are spent. */
  reap(): number {
    let returned = 0;
    const expired = this.inState('active')
      .filter(([, j]) => j.score <= this.now)
      .slice(0, REAP_ON_CLAIM);
    for (const [id, job] of expired) {
      job.header.hasError = true;
      if (job.header.attempts >= job.header.maxAttempts) {
        job.state = 'dead';
        job.score = this.now;
        delete job.member;
      } else {
        this.place(id, job, this.now);
        returned++;
      }
    }
    return returned;
  }

  /** extend.lua: each valid lease to now + ms unless already later; 0 for a lost one. */
  extend(ms: number, handles: readonly Handle[]): number[] {
    return handles.map((handle) => {
      const job = this.jobs.get(handle.id);
      if (job?.state !== 'active' || job.member !== handle.member || job.score <= this.now) return 0;
      job.score = Math.max(job.score, this.now + ms);
      handle.knownDeadline = job.score;
      return job.score;
    });
  }

  /** cancel.lua: a waiting or running job becomes a cancelled record. */
  cancel(id: string): 'waiting' | 'running' | null {
    const job = this.jobs.get(id);
    if (!job || (job.state !== 'waiting' && job.state !== 'active')) return null;
    const was = job.state === 'waiting' ? 'waiting' : 'running';
    job.state = 'cancelled';
    job.score = this.now;
    delete job.member;
    this.promoted.delete(id);
    return was;
  }
}
