/**
 * Time as a worker sees it: the server's clock estimated between readings, and a sleep that a
 * wake-up can cut short. Only durations from the local monotonic clock are used, so a worker whose
 * wall clock is wrong still sleeps the right amount (DESIGN invariant 7).
 */
import { performance } from 'node:perf_hooks';

/**
 * Whole ms elapsed on the monotonic clock since `since` (a performance.now() reading), rounded
 * down: a delay shortened by this can only end at or after the time it was asked for.
 */
export function wholeMsSince(since: number): number {
  return Math.max(0, Math.floor(performance.now() - since));
}

/** The server's clock, estimated as the last reading plus local monotonic time since. */
export class ServerClock {
  private serverMs = 0;
  private localMs = 0;
  private seen = false;

  /** Record a server time just read (from a script reply). */
  observe(serverNowMs: number): void {
    this.serverMs = serverNowMs;
    this.localMs = performance.now();
    this.seen = true;
  }

  /** False until the first reading: before it, now() means nothing. */
  get observed(): boolean {
    return this.seen;
  }

  /** The estimated server time now, in epoch ms. */
  now(): number {
    return this.serverMs + (performance.now() - this.localMs);
  }
}

/**
 * A sleep that ends at its timer or earlier, when wakeWithin() asks for an earlier end. A request
 * that arrives while nobody sleeps is kept for the next sleep, so no wake-up is lost between a
 * claim and the sleep that follows it.
 *
 * A sleep that ends at a due time (an `approach` sleep, or one ended by wakeWithin) may finish on a
 * local spin: the timer is set `spinMs` short of the end, and the rest is waited out on
 * setImmediate (never a busy `while`, so I/O and the handlers still run), because a timer fires
 * up to a millisecond late. The spin is bounded by `spinMs` per due time and never happens in a
 * sleep that does not end at a due time (the idle safety timer, an error pause).
 */
export class Sleeper {
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private endAt = Infinity;
  private finish: (() => void) | undefined;
  private pendingEndAt = Infinity;

  /** `spinMs`: the longest local spin before a due time (0: timers only). */
  constructor(private readonly spinMs = 0) {}

  /** Sleep up to `ms`; resolves early on wakeWithin()/wakeNow(). `approach`: `ms` ends at a due time. */
  sleep(ms: number, approach = false): Promise<void> {
    const requested = performance.now() + Math.max(0, ms);
    const pending = this.pendingEndAt < requested;
    const endAt = pending ? this.pendingEndAt : requested;
    this.pendingEndAt = Infinity;
    return new Promise((resolve) => {
      this.finish = resolve;
      // A kept wake-up ends at a due time too (wakeWithin).
      this.arm(endAt, approach || pending);
    });
  }

  /** End the current (or next) sleep within `ms` (at a due time), unless it ends sooner anyway. */
  wakeWithin(ms: number): void {
    const endAt = performance.now() + Math.max(0, ms);
    if (this.finish) {
      if (endAt < this.endAt) this.arm(endAt, true);
    } else if (endAt < this.pendingEndAt) {
      this.pendingEndAt = endAt;
    }
  }

  /** End the current (or next) sleep now. */
  wakeNow(): void {
    this.wakeWithin(0);
  }

  /** End the current sleep now, if there is one; unlike wakeNow, never shortens the next one. */
  interrupt(): void {
    if (this.finish) this.end();
  }

  private arm(endAt: number, approach: boolean): void {
    this.cancel();
    this.endAt = endAt;
    const delay = endAt - performance.now();
    if (delay <= 0) {
      this.end();
      return;
    }
    const lead = approach ? this.spinMs : 0;
    if (delay <= lead) {
      this.spin();
      return;
    }
    // setTimeout works in whole ms and may fire up to 1 ms short of a fractional target. Without
    // a spin, the claim that follows checks due times by the server clock, so waking early is
    // harmless; with one, the timer only brings the sleep to the spin, which arm() checks again.
    this.timer = setTimeout(
      () => (lead > 0 ? this.arm(this.endAt, true) : this.end()),
      Math.ceil(delay - lead),
    );
  }

  /** Wait out the last `spinMs` one event-loop turn at a time, ending at endAt, not before. */
  private spin(): void {
    this.immediate = setImmediate(() => {
      if (performance.now() >= this.endAt) this.end();
      else this.spin();
    });
  }

  private cancel(): void {
    clearTimeout(this.timer);
    clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private end(): void {
    this.cancel();
    this.endAt = Infinity;
    const finish = this.finish;
    this.finish = undefined;
    finish?.();
  }
}
