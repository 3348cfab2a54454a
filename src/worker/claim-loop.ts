/**
 * The claim loop: claim what there is room for, then sleep until the next due time (or lease
 * expiry), a wake-up, or the safety timer, whichever is first. There is no polling interval that
 * decides precision: the sleep ends at the due time itself.
 */
import type { ServerClock, Sleeper } from '../clock.js';
import type { ClaimedJob, UnreadableJob } from '../operations/claim.js';
import type { ClaimSource } from './claim-source.js';

/** What the loop needs from the worker: storage as functions, so the loop holds no queries. */
export interface ClaimLoopDeps {
  /**
   * Where due jobs come from, and how to wait for more (the pause must end early on
   * sleeper.wakeNow(); one that ends at a due time is marked `approach`, for the sleeper's spin).
   */
  source: Pick<ClaimSource, 'claim' | 'pause'>;
  freeSlots(): number;
  /** Resolves when a slot frees (or the worker stops). */
  waitForSlot(): Promise<void>;
  start(job: ClaimedJob): void;
  /** A leased job whose record this code cannot read: buried with the reason. */
  bury(job: UnreadableJob): void;
  clock: ServerClock;
  sleeper: Sleeper;
  /** Longest sleep without looking: bounds the delay a lost wake-up can cause. */
  maxSleepMs: number;
  /**
   * Claim this long ahead of a due time the loop slept until (start-gate.ts); 0: never (a batch
   * worker, the wheel). `start` must then hold a job until it is due.
   */
  claimAheadMs: number;
  onError(err: unknown): void;
}

/**
 * The longest local spin before a due time (see Sleeper): a timer fires up to 1 ms late, so the
 * last stretch is waited out locally, without a Redis call, and the claim goes when the job is due.
 */
export const APPROACH_SPIN_MS = 2;

/** Pause after a failed claim before the next try, so a broken server is not hammered. */
const ERROR_PAUSE_MS = 1_000;

/** Runs claims until stopped. */
export class ClaimLoop {
  private stopped = false;
  private done: Promise<void> | undefined;
  /**
   * Ends the wait for a slot in progress, if any. Not a race with one long-lived "stop" promise:
   * each race would leave a reaction on it, one per wait, kept until the worker stops.
   */
  private endSlotWait: (() => void) | undefined;
  /** Whether the sleep runOnce last returned ends at a due time (not the safety timer). */
  private sleepEndsAtDue = false;
  /** Whether the next claim reaches ahead: the sleep before it ends claimAheadMs short of a due time. */
  private claimAhead = false;

  constructor(private readonly deps: ClaimLoopDeps) {}

  /** Start the loop (once). */
  start(): void {
    this.done ??= this.loop();
  }

  /** Stop after the claim in progress; resolves when the loop has exited. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.endSlotWait?.();
    this.deps.sleeper.wakeNow();
    await this.done;
  }

  /** One claim with all free slots; returns how long to sleep before the next (0: go on at once). */
  async runOnce(): Promise<number> {
    const free = this.deps.freeSlots();
    this.sleepEndsAtDue = false;
    const ahead = this.claimAhead;
    this.claimAhead = false;
    const out = await this.deps.source.claim(free, ahead);
    this.deps.clock.observe(out.now);
    for (const job of out.jobs) this.deps.start(job);
    for (const job of out.unreadable) this.deps.bury(job);
    const taken = out.jobs.length + out.unreadable.length;
    if (taken === free) return 0;
    if (out.nextAt < 0) return this.deps.maxSleepMs;
    // At least 1 ms when nothing came: nextAt cannot be in the past then, but a loop of claims
    // without a pause must never be possible.
    const floor = taken === 0 ? 1 : 0;
    // Counted from the server clock now, not from the claim's `now` (the reply took time to come
    // back). With no lead: the estimate is behind the server by at least the reply's trip back
    // (half a round trip) and the ms TIME was rounded down to, so the claim sent when the
    // estimate reaches nextAt reaches Redis when the job is due; the sleeper's spin takes out the
    // timer's lateness. Waking early is still safe: the script never claims a job before it is
    // due; it answers with nothing and the next due time, and the loop sleeps again.
    const untilDue = out.nextAt - this.deps.clock.now();
    this.sleepEndsAtDue = untilDue <= this.deps.maxSleepMs;
    // A sleep until a due time ends claimAheadMs short of it, and that claim reaches ahead: the
    // reply is back before the job is due and the gate starts it then, with no round trip after
    // the due time. Jobs due sooner than that go by the plain claim at their due time (the loop
    // is awake anyway when jobs fall due every ms or two, and a gate spinning all the time would
    // take the core Redis needs).
    if (this.sleepEndsAtDue && this.canReachAhead(untilDue)) return this.wakeFor(untilDue);
    return Math.min(this.deps.maxSleepMs, Math.max(floor, untilDue));
  }

  /**
   * Ms from now at which to claim for a job due in `untilDueMs` (a wake-up message): that long less
   * claimAheadMs when the claim can reach ahead, and the next claim then does.
   */
  wakeFor(untilDueMs: number): number {
    if (!this.canReachAhead(untilDueMs)) return untilDueMs;
    this.claimAhead = true;
    return untilDueMs - this.deps.claimAheadMs;
  }

  /** A claim for a job due in `untilDueMs` can go claimAheadMs before it (0: never). */
  private canReachAhead(untilDueMs: number): boolean {
    const aheadMs = this.deps.claimAheadMs;
    return aheadMs > 0 && untilDueMs > aheadMs;
  }

  /** Resolves when a slot frees or stop() is called. */
  private async slotOrStop(): Promise<void> {
    const slot = this.deps.waitForSlot();
    await new Promise<void>((resolve) => {
      this.endSlotWait = resolve;
      void slot.then(resolve);
    });
    this.endSlotWait = undefined;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      if (this.deps.freeSlots() <= 0) {
        await this.slotOrStop();
        continue;
      }
      let sleepMs: number;
      try {
        sleepMs = await this.runOnce();
      } catch (err) {
        if (this.stopped) break;
        this.deps.onError(err);
        sleepMs = ERROR_PAUSE_MS;
        this.sleepEndsAtDue = false;
      }
      if (sleepMs > 0 && !this.stopped) {
        await this.deps.source.pause(sleepMs, this.sleepEndsAtDue);
      }
    }
  }
}
