/**
 * The exchange duty of one partition (docs/ARCHITECTURE.md §6.1): acks and claims share one
 * script call. Acks queue while a call is in flight; the next call carries all of them, whether
 * it claims (the claim loop) or not (an ack-only flush, sent as soon as nothing else is on its
 * way). An ack-only flush waits for the call in flight to answer; a claim waits only for a claim:
 * behind an ack-only call it is written at once, and Redis runs the two in the order written (one
 * connection), so the acks still come first, and a claim at a due time does not wait out the
 * other call's round trip. An ack
 * waits for a timer only when the claim loop sleeps until a due time that close (ACK_RIDE_MS): it
 * rides that claim instead of going on its own just before it. Acks that free something to claim
 * (a group's slot) wake a sleeping claim loop instead, and ride the claim it sends at once.
 */
import type { AckItem, AckOutcome, ClaimOutput } from '../operations/claim.js';

/**
 * Told the outcome of an ack by the call that carried it, without a promise: a worker's attempt
 * (attempt.ts), one per job at every concurrency. It must not throw.
 */
export interface AckListener {
  ackSettled(outcome: AckOutcome): void;
  /** The call failed (Redis unreachable, a reply without this ack's outcome). */
  ackFailed(err: unknown): void;
}

/**
 * Acks that go in one call, and who hears each one's outcome when it answers. A job's ack costs two
 * array slots, where each had a promise, its resolvers and a record of its own.
 */
class AckBatch {
  readonly items: AckItem[] = [];
  /** listeners[i] hears of items[i]. */
  readonly listeners: AckListener[] = [];

  /** The call answered `out`: each listener hears its ack's outcome. */
  settle(out: ClaimOutput): void {
    for (let i = 0; i < this.listeners.length; i++) {
      const outcome = out.acks[i];
      if (outcome) this.listeners[i]!.ackSettled(outcome);
      else this.listeners[i]!.ackFailed(new Error(`claim: no ack outcome for ${this.items[i]!.member}`));
    }
  }

  /** The call failed: every ack of it was not applied. */
  fail(err: unknown): void {
    for (const listener of this.listeners) listener.ackFailed(err);
  }
}

/**
 * How long acks wait for a claim the loop will send at a due time, rather than going on their own.
 * With jobs falling due every ms or two (W2, W8), an ack-only call went out between every two
 * claims: twice the calls, and the claim at the due time queued behind the ack-only one's round
 * trip. An ack's promise settles at most this much later; the job is done either way.
 */
export const ACK_RIDE_MS = 2;

/** Sends `limit` and the acks in one call; `limit` 0 acks only; `ahead`: claim ahead (claim.ts). */
export type ExchangeCall = (limit: number, acks: readonly AckItem[], ahead: boolean) => Promise<ClaimOutput>;

const NO_ACKS: readonly AckItem[] = [];

/** Resolves after the current turn of the event loop (its I/O and immediates). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** What the exchange may ask of the claim loop and the worker around it. */
export interface ExchangeOptions {
  /** Acks per call at most; more go in the next call. */
  maxAcks?: number;
  /** Ms until the claim loop next claims at a due time, if it sleeps until one (Sleeper.dueEndWithin). */
  nextClaimWithin?: () => number | undefined;
  /** Whether acking `item` frees something the claim loop may claim (a group's slot). */
  freesClaim?: (item: AckItem) => boolean;
  /**
   * Ends the claim loop's sleep so it claims now; false when it was not asleep. A group at its
   * concurrency limit went to sleep with the loop: without this, its next job started only after
   * an ack-only call, the wake message that call publishes, and a claim (three trips for one job
   * at group concurrency 1, where the claim carrying the ack is one).
   */
  wakeClaim?: () => boolean;
}

/** One partition's queue of acks, and the one call in flight. */
export class Exchange {
  /** Acks waiting for a call, in order: each batch goes in one call, and only the last one grows. */
  private queued: AckBatch[] = [];
  /** The end of the last call queued: an ack-only flush starts after it has answered. */
  private tail: Promise<unknown> = Promise.resolve();
  /** Claims sent and not answered yet (the claim loop sends one at a time). */
  private claimsOut = 0;
  /** The planned ack-only flush, cancelled when a call takes every queued ack first. */
  private flushPlanned: NodeJS.Immediate | undefined;
  /** The same, planned for just after a claim due soon (ACK_RIDE_MS). */
  private flushTimer: NodeJS.Timeout | undefined;
  /** A queued ack frees something to claim: the flush wakes the claim loop rather than go alone. */
  private claimWanted = false;
  private readonly maxAcks: number;

  constructor(
    private readonly call: ExchangeCall,
    private readonly options: ExchangeOptions = {},
  ) {
    this.maxAcks = options.maxAcks ?? 500;
  }

  /** Queue an ack; resolves with its outcome once a call has carried it (ackTo, as a promise). */
  ack(item: AckItem): Promise<AckOutcome> {
    return new Promise((resolve, reject) => this.ackTo(item, { ackSettled: resolve, ackFailed: reject }));
  }

  /** Queue an ack whose outcome `listener` hears when a call has carried it (no promise made). */
  ackTo(item: AckItem, listener: AckListener): void {
    let batch = this.queued[this.queued.length - 1];
    if (!batch || batch.items.length >= this.maxAcks) this.queued.push((batch = new AckBatch()));
    batch.items.push(item);
    batch.listeners.push(listener);
    if (!this.claimWanted && this.options.freesClaim?.(item)) this.claimWanted = true;
    this.planFlush();
  }

  /**
   * Claim up to `limit` jobs, carrying every queued ack; sent at once unless a claim is in flight
   * (then after it answers). `ahead`: also jobs due within CLAIM_AHEAD_MS (the caller holds them
   * until due).
   */
  claim(limit: number, ahead = false): Promise<ClaimOutput> {
    const next =
      this.claimsOut === 0
        ? this.sendClaim(limit, ahead)
        : this.tail.then(() => this.sendClaim(limit, ahead));
    // A flush queued later waits for this claim and for the call it went behind.
    this.tail = Promise.allSettled([this.tail, next]);
    return next;
  }

  private async sendClaim(limit: number, ahead: boolean): Promise<ClaimOutput> {
    this.claimsOut++;
    try {
      return await this.send(limit, ahead);
    } finally {
      this.claimsOut--;
    }
  }

  /** Acks waiting for a call. */
  get pending(): number {
    return this.queued.reduce((n, batch) => n + batch.items.length, 0);
  }

  /**
   * Send the queued acks on their own unless a claim takes them first: planned after the
   * current turn of the event loop, by which time a claim the freed slot triggers has gone.
   */
  private planFlush(): void {
    if (this.flushPlanned || this.flushTimer) return;
    const claimIn = this.options.nextClaimWithin?.();
    if (claimIn !== undefined && claimIn <= ACK_RIDE_MS) {
      this.flushAfterClaim(claimIn);
      return;
    }
    this.flushPlanned = setImmediate(() => {
      this.flushPlanned = undefined;
      // Checked now, not at the ack: the loop goes to sleep after starting a claim's jobs, and a
      // quick handler's ack comes before that.
      if (this.claimWanted && this.options.wakeClaim?.()) this.flushAfterClaim(0);
      else this.flush();
    });
  }

  /**
   * The claim the loop sends in `claimInMs` takes the queued acks; this flush goes only if it did
   * not (a partition that was not due, a stop), a ms after it.
   */
  private flushAfterClaim(claimInMs: number): void {
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.flush();
    }, claimInMs + 1);
  }

  private flush(): void {
    if (this.queued.length === 0) return;
    // Behind a claim, the acks wait one more turn once it has answered: the claim loop sends its
    // next claim at once when jobs are due and slots free, and they ride that. Going at the
    // answer, a third of W1's calls at concurrency 50 were ack-only, each just before a claim.
    const behindClaim = this.claimsOut > 0;
    const next = this.tail.then((): Promise<unknown> | undefined => {
      if (this.queued.length === 0) return undefined;
      if (!behindClaim) return this.send(0);
      return nextTurn().then((): Promise<unknown> | undefined => {
        if (this.queued.length === 0) return undefined;
        // A claim went out meanwhile and took none of them (they came after it): behind it again.
        if (this.claimsOut > 0) {
          this.flush();
          return undefined;
        }
        return this.send(0);
      });
    });
    this.tail = next.catch(() => {});
  }

  private cancelFlush(): void {
    // An immediate left pending would find nothing to send and still cost the event loop one more
    // poll (at concurrency 1, one per job).
    if (this.flushPlanned) clearImmediate(this.flushPlanned);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushPlanned = undefined;
    this.flushTimer = undefined;
  }

  private async send(limit: number, ahead = false): Promise<ClaimOutput> {
    const batch = this.queued.shift();
    if (this.queued.length > 0) this.planFlush();
    else {
      this.cancelFlush();
      this.claimWanted = false;
    }
    let out: ClaimOutput;
    try {
      out = await this.call(limit, batch ? batch.items : NO_ACKS, ahead);
    } catch (err) {
      batch?.fail(err);
      throw err;
    }
    batch?.settle(out);
    return out;
  }
}
