/**
 * Claim ahead, and the gate that makes it safe (docs/ARCHITECTURE.md §5.3). A worker that slept
 * until a due time sends its claim CLAIM_AHEAD_MS before it, asking the script to lease jobs due
 * up to that long after the server's now. The reply then arrives before the due time instead of a
 * round trip after it, and the gate starts each such job when a lower bound of the server clock
 * reaches its due time: never before it by the server clock, and with no round trip left between
 * the due time and the handler.
 */
import type { ServerClock } from '../clock.js';
import type { ReplyClock } from '../operations/claim.js';

/**
 * How far ahead a claim after a sleep reaches: more than a round trip to Redis on a loaded host
 * (0.3-0.9 ms measured here), so the reply is nearly always back before the due time. A lease
 * starts at most this long before its job may run.
 */
export const CLAIM_AHEAD_MS = 2;

/**
 * How fast the server's clock may run slower than this process's monotonic clock: 1000 ppm, twice
 * the most the kernel slews a clock (as ServerTimeBound on the producer side). The bound is never
 * more than a few ms old, so this costs µs.
 */
const SLEW = 1e-3;

/**
 * The last stretch before a held job's due time is waited out one event-loop turn at a time
 * (a timer fires up to 1 ms late); longer waits take a timer first.
 */
const SPIN_MS = 1.5;

/**
 * The server's clock now, at least: the TIME a claim reply carried (read before the reply left)
 * plus the local monotonic time since it arrived, slowed by SLEW.
 */
export function serverNowAtLeast(reply: ReplyClock): number {
  return reply.serverUs / 1000 + (performance.now() - reply.arrivedAt) * (1 - SLEW);
}

interface Held {
  at: number;
  reply: ReplyClock | undefined;
  go: () => void;
}

/** Holds jobs claimed ahead until the server clock reaches their due time. */
export class StartGate {
  private held: Held[] = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;

  /** `clock`: for a job whose claim reply carried no TIME in µs (none of delayq's do today). */
  constructor(private readonly clock: Pick<ServerClock, 'now'>) {}

  /** The server's clock now, at least, by `reply` when given. */
  serverNow(reply: ReplyClock | undefined): number {
    return reply ? serverNowAtLeast(reply) : this.clock.now();
  }

  /** Resolves once the server's clock is at `at` or past it, by `reply`'s bound of it. */
  until(at: number, reply: ReplyClock | undefined): Promise<void> {
    if (this.serverNow(reply) >= at) return Promise.resolve();
    return new Promise((go) => {
      this.held.push({ at, reply, go });
      this.plan();
    });
  }

  /**
   * Wait as until() does, then return when the job starts by the server clock, at least: `reply`'s
   * bound of it in whole ms. Not raised to `at`: it is at or past `at` because the wait ended
   * there, so a job that reports a start before its due time shows a gate that let it go early
   * (conformance checks job.claimedAt >= runAt), where a clamp would hide it.
   */
  async startAt(at: number, reply: ReplyClock | undefined): Promise<number> {
    await this.until(at, reply);
    return Math.floor(this.serverNow(reply));
  }

  /** Jobs held now. */
  get size(): number {
    return this.held.length;
  }

  // One timer or spin serves every held job: a claim ahead may bring a batch due in the same ms.
  private readonly check = (): void => {
    this.timer = undefined;
    this.immediate = undefined;
    // One pass: each held job's time left is read once (the spin runs this every turn).
    const ready: Held[] = [];
    const waiting: Held[] = [];
    for (const h of this.held) (this.left(h) <= 0 ? ready : waiting).push(h);
    this.held = waiting;
    ready.sort((a, b) => a.at - b.at);
    for (const h of ready) h.go();
    this.plan();
  };

  private left(h: Held): number {
    return h.at - this.serverNow(h.reply);
  }

  private plan(): void {
    if (this.held.length === 0 || this.timer || this.immediate) return;
    const left = Math.min(...this.held.map((h) => this.left(h)));
    if (left > SPIN_MS) this.timer = setTimeout(this.check, Math.floor(left - SPIN_MS));
    else this.immediate = setImmediate(this.check);
  }
}
