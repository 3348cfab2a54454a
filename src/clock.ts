/**
 * Time as a worker sees it: the server's clock estimated between readings, and a sleep that a
 * wake-up can cut short. Only durations from the local monotonic clock are used, so a worker whose
 * wall clock is wrong still sleeps the right amount (docs/DESIGN.md invariant 7).
 */
import { performance } from 'node:perf_hooks';

/**
 * Whole ms elapsed on the monotonic clock since `since` (a performance.now() reading), rounded
 * down: a delay shortened by this can only end at or after the time it was asked for.
 */
export function wholeMsSince(since: number): number {
  return Math.max(0, Math.floor(performance.now() - since));
}

/**
 * How fast a held reading of the server clock is let down, per ms of its age: 10 ppm. Kept as a
 * lower bound it stays one as long as the server's clock runs no slower than ours; if it does, a
 * reading held too high comes down by this, and until then a claim sent early finds nothing due
 * and costs one more round trip, never a job early (the scripts compare with TIME).
 */
const HELD_DRIFT = 1e-5;

/**
 * The server's clock, estimated from readings in script replies: the most it is known to read
 * now. Each reading (TIME in ms, rounded down, read before the reply came back) says the server's
 * clock minus the local monotonic clock is at least `reading - arrival`. A reply that waited (in
 * the socket while a GC ran, or for a core) gives a looser bound than one that came at once, so
 * the highest is kept: taking the last one, as this did before, set the estimate back by every
 * such wait, and a worker sleeping until a due time then woke that late. Where the send time is
 * known, the reading also bounds the clock from above (`reading + 1 ms - send`): a held estimate
 * above that (the server's clock stepped back, or a failover to a node whose clock is behind) is
 * dropped for the new reading.
 */
export class ServerClock {
  /** Lower bound of (server epoch ms - local performance.now()) at local time `heldAt`. */
  private offset = -Infinity;
  private heldAt = 0;

  /**
   * Record a server time just read (from a script reply); `sentAt`: the performance.now() at
   * which the call that read it was sent, when known.
   */
  observe(serverNowMs: number, sentAt?: number): void {
    const arrived = performance.now();
    const lower = serverNowMs - arrived;
    const held = this.offsetAt(arrived);
    const tooHigh = sentAt !== undefined && held > serverNowMs + 1 - sentAt;
    if (lower >= held || tooHigh) {
      this.offset = lower;
      this.heldAt = arrived;
    }
  }

  /** False until the first reading: before it, now() means nothing. */
  get observed(): boolean {
    return this.offset !== -Infinity;
  }

  /** The estimated server time now, in epoch ms (at most the server's reading now); before any reading, meaningless. */
  now(): number {
    const at = performance.now();
    return this.observed ? at + this.offsetAt(at) : at;
  }

  private offsetAt(at: number): number {
    return this.offset - HELD_DRIFT * (at - this.heldAt);
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
  /** Whether the current sleep ends at a due time (so a claim goes out when it ends). */
  private endsAtDue = false;
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

  /**
   * Ms until the current sleep ends, when it ends at a due time (the claim loop claims then);
   * undefined when nobody sleeps or the sleep is the idle safety timer or an error pause.
   */
  dueEndWithin(): number | undefined {
    if (!this.finish || !this.endsAtDue) return undefined;
    return Math.max(0, this.endAt - performance.now());
  }

  /**
   * End the current sleep now, if there is one (true then); unlike wakeNow, never shortens the
   * next one.
   */
  interrupt(): boolean {
    if (!this.finish) return false;
    this.end();
    return true;
  }

  private arm(endAt: number, approach: boolean): void {
    this.cancel();
    this.endAt = endAt;
    this.endsAtDue = approach;
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
