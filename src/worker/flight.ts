/**
 * An attempt of a one-job handler running in a slot: what the dispatcher (dispatcher.ts) knows it
 * by, and what its run (run-attempt.ts) tells when the handler is done and when the attempt has
 * ended. One object per job, where the flight record, the slot's release and the handler-done
 * callback were three (and closures each).
 */
import type { Attempt } from './attempt.js';
import type { AttemptFlight } from './run-attempt.js';
import type { Slots } from './slots.js';

/** The `done` of an attempt that has nothing to wait for (yet). */
export const SETTLED: Promise<void> = Promise.resolve();

/** What a one-job Flight tells its dispatcher: one per worker. */
export interface FlightLane<T> {
  readonly slots: Slots;
  /** Start prefetched jobs while slots are free. */
  next(): void;
  /** The flight's attempt is over: the dispatcher forgets it. */
  ended(flight: Flight<T>): void;
}

/** One attempt in a slot, from its start to its end. */
export class Flight<T> implements AttemptFlight {
  private holdsSlot = true;
  private hasEnded = false;
  /** What `done` gave out before the end, resolved by ended(): made only when asked (by close). */
  private endWaiter: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    readonly attempt: Attempt<T>,
    private readonly lane: FlightLane<T>,
  ) {}

  handlerDone(): void {
    if (this.holdsSlot) {
      this.holdsSlot = false;
      this.lane.slots.release();
    }
    this.lane.next();
  }

  /**
   * Settles when the attempt has ended: what close() waits for. Not the run's promise: a
   * completion's run returns when its ack is queued, and the attempt ends when the ack is applied.
   */
  get done(): Promise<void> {
    if (this.hasEnded) return SETTLED;
    if (!this.endWaiter) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.endWaiter = { promise, resolve };
    }
    return this.endWaiter.promise;
  }

  ended(): void {
    this.hasEnded = true;
    this.lane.ended(this);
    this.handlerDone();
    this.endWaiter?.resolve();
  }
}
