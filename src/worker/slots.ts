/**
 * The worker's concurrency slots: a slot is held from a job's claim until its handler is done (or
 * is known never to run). A job whose handler is done but whose ack is still on its way holds no
 * slot, so the next claim can take as many jobs as handlers have finished.
 */

/** Counts held slots and wakes the claim loop when one frees. */
export class Slots {
  private held = 0;
  private waiters: Array<() => void> = [];

  constructor(private readonly size: number) {}

  /** Slots not held. */
  free(): number {
    return this.size - this.held;
  }

  /** Whether every slot is held. */
  full(): boolean {
    return this.held >= this.size;
  }

  /** Hold a slot; returns its release, which frees it once however often it is called. */
  take(): () => void {
    this.hold();
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      this.release();
    };
  }

  /**
   * Hold a slot, to be given back by exactly one release(): for a caller that already keeps track
   * of whether it holds one (the worker's one-job flights), without take()'s closure per job.
   */
  hold(): void {
    this.held++;
  }

  /** Give back a slot hold() took. */
  release(): void {
    this.held--;
    this.waiters.shift()?.();
  }

  /** Resolves when a slot frees (or never, once dropWaiters() ran: the loop races it with its stop). */
  waitForSlot(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Forget the waiters (at shutdown). */
  dropWaiters(): void {
    this.waiters = [];
  }
}
