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
 */
export class Sleeper {
  private timer: NodeJS.Timeout | undefined;
  private endAt = Infinity;
  private finish: (() => void) | undefined;
  private pendingEndAt = Infinity;

  /** Sleep up to `ms`; resolves early on wakeWithin()/wakeNow(). */
  sleep(ms: number): Promise<void> {
    const requested = performance.now() + Math.max(0, ms);
    const endAt = Math.min(requested, this.pendingEndAt);
    this.pendingEndAt = Infinity;
    return new Promise((resolve) => {
      this.finish = resolve;
      this.arm(endAt);
    });
  }

  /** End the current (or next) sleep within `ms`, unless it ends sooner anyway. */
  wakeWithin(ms: number): void {
    const endAt = performance.now() + Math.max(0, ms);
    if (this.finish) {
      if (endAt < this.endAt) this.arm(endAt);
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

  private arm(endAt: number): void {
    clearTimeout(this.timer);
    this.endAt = endAt;
    const delay = endAt - performance.now();
    if (delay <= 0) {
      this.end();
      return;
    }
    // setTimeout works in whole ms and may fire up to 1 ms short of a fractional target; the
    // claim that follows checks due times by the server clock, so waking early is harmless.
    this.timer = setTimeout(() => this.end(), Math.ceil(delay));
  }

  private end(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.endAt = Infinity;
    const finish = this.finish;
    this.finish = undefined;
    finish?.();
  }
}
