/**
 * Keeps the leases of running jobs alive: every third of the lease, one extend call for every held
 * job whose lease is at least a third used. A job whose lease turns out lost is reported at once,
 * so its handler's signal aborts instead of running on unaware.
 */
import type { ServerClock } from '../clock.js';
import { DelayqError, LeaseLostError } from '../errors.js';
import type { ExtendOutput } from '../operations/extend.js';
import { PeriodicDuty } from './duty.js';

/** A lease this worker holds. */
export interface HeldLease {
  readonly id: string;
  readonly token: string;
  /** "<token>|<id>": what extend presents. */
  readonly member: string;
  /** Deadline by the server clock, as last confirmed. */
  deadline: number;
  lost: boolean;
  /**
   * Where the keeper holds it (its index in the keeper's list), -1 or absent when not held: so a
   * job's track and untrack touch no Map or Set, whose tables a worker at concurrency 50 grew,
   * shrank and rebuilt every few dozen jobs.
   */
  keeperSlot?: number;
}

/** What the keeper needs from the worker. */
export interface LeaseKeeperDeps {
  leaseMs: number;
  clock: ServerClock;
  extend(leaseMs: number, held: readonly HeldLease[]): Promise<ExtendOutput>;
  onLost(lease: HeldLease): void;
  onError(err: unknown): void;
}

/** Renews held leases in the background. */
export class LeaseKeeper {
  /** The leases held, in no particular order (each knows its index: keeperSlot). */
  private readonly held: HeldLease[] = [];
  private readonly duty: PeriodicDuty;

  constructor(private readonly deps: LeaseKeeperDeps) {
    this.duty = new PeriodicDuty(
      Math.max(10, Math.floor(deps.leaseMs / 3)),
      () => this.runOnce(),
      (err) => deps.onError(err),
    );
  }

  track(lease: HeldLease): void {
    if (this.holds(lease)) return;
    lease.keeperSlot = this.held.length;
    this.held.push(lease);
  }

  untrack(lease: HeldLease): void {
    if (!this.holds(lease)) return;
    const slot = lease.keeperSlot!;
    // The last lease takes the freed slot.
    const last = this.held.pop()!;
    if (last !== lease) {
      this.held[slot] = last;
      last.keeperSlot = slot;
    }
    lease.keeperSlot = -1;
  }

  /** Whether `lease` is held by this keeper. */
  private holds(lease: HeldLease): boolean {
    const slot = lease.keeperSlot;
    return slot !== undefined && slot >= 0 && this.held[slot] === lease;
  }

  start(): void {
    this.duty.start();
  }

  stop(): Promise<void> {
    return this.duty.stop();
  }

  /** Extend every held lease that is at least a third used, in one call. */
  async runOnce(): Promise<void> {
    const renewBefore = this.deps.clock.now() + (this.deps.leaseMs * 2) / 3;
    const due = this.held.filter((lease) => !lease.lost && lease.deadline <= renewBefore);
    if (due.length === 0) return;
    await this.extend(due, this.deps.leaseMs);
  }

  /**
   * job.extendLease(ms): extend one lease to now + `ms`. Throws ValidationError for a bad `ms`,
   * LeaseLostError when the lease is gone.
   */
  async extendOne(lease: HeldLease, ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms <= 0) {
      throw new DelayqError('DELAYQ_VALIDATION', `extendLease needs a positive number of ms, got ${ms}`);
    }
    await this.extend([lease], Math.round(ms));
    if (lease.lost) throw new LeaseLostError(lease.id, 'could not extend');
  }

  /** Extend `leases` to now + `ms`; marks and reports the ones found lost. */
  async extend(leases: readonly HeldLease[], ms: number): Promise<void> {
    const { now, deadlines } = await this.deps.extend(ms, leases);
    this.deps.clock.observe(now);
    leases.forEach((lease, i) => {
      const deadline = deadlines[i];
      if (deadline === null || deadline === undefined) {
        // A lease untracked meanwhile is being settled (ack or fail in flight): not a loss.
        if (!lease.lost && this.holds(lease)) {
          lease.lost = true;
          this.deps.onLost(lease);
        }
      } else {
        lease.deadline = deadline;
      }
    });
  }
}
