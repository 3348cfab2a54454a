/**
 * The Reaper duty: ends leases whose deadline passed (their worker crashed, hung or was cut off),
 * and keeps finished jobs within their retention (trim). Every worker runs one; both scripts are
 * idempotent, so no leader is needed.
 */
import type { ReapOutput } from '../operations/reap.js';
import type { TrimOutput } from '../operations/trim.js';
import { PeriodicDuty } from './duty.js';

/** How often finished jobs are trimmed while there is something to trim: a burst never piles up far past its bound. */
export const TRIM_INTERVAL_MS = 1_000;

/**
 * How often an idle worker trims anyway: jobs other workers or producers finished (a cancel, a
 * dead job retried elsewhere) and ages running out on a quiet queue are caught by this sweep, so
 * retention can overrun its age by up to this much there. Slow, so an idle worker stays quiet.
 */
export const TRIM_SWEEP_MS = 60_000;

/**
 * A periodic reap and a periodic trim. Every claim reaps first, and an idle worker's claim loop
 * already wakes at the earliest lease deadline; so the tick reaps only while `busy()` says the
 * worker has no free slot (and so is not claiming). That keeps an idle worker's command rate down.
 * The trim runs whatever the worker does (the hot path never trims), but only while there is
 * something to trim: this worker finished a job since the last trim (finished()), or the last trim
 * removed something (a backlog goes over several calls). Otherwise it waits for the slow sweep.
 */
export class Reaper {
  private readonly reapDuty: PeriodicDuty;
  private readonly trimDuty: PeriodicDuty | null;
  /** True when a trim is worth sending at the next tick; starts true so a worker trims soon after start. */
  private trimPending = true;
  private lastTrimAt = 0;

  constructor(
    intervalMs: number,
    private readonly reap: () => Promise<ReapOutput>,
    busy: () => boolean,
    onError: (err: unknown) => void,
    /** Trims every partition once; absent: this worker does not trim. */
    private readonly trim?: () => Promise<TrimOutput>,
    trimIntervalMs: number = TRIM_INTERVAL_MS,
    private readonly trimSweepMs: number = TRIM_SWEEP_MS,
    /** Monotonic milliseconds; a parameter so tests can move time. */
    private readonly monotonicMs: () => number = () => performance.now(),
  ) {
    this.reapDuty = new PeriodicDuty(
      intervalMs,
      async () => {
        if (busy()) await this.runOnce();
      },
      onError,
    );
    this.trimDuty = trim ? new PeriodicDuty(trimIntervalMs, () => this.trimIfDue(), onError) : null;
  }

  start(): void {
    this.lastTrimAt = this.monotonicMs();
    this.reapDuty.start();
    this.trimDuty?.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.reapDuty.stop(), this.trimDuty?.stop()]);
  }

  /** This worker finished a job (completed, failed for good, cancelled): trim at the next tick. */
  finished(): void {
    this.trimPending = true;
  }

  /** One reap round. */
  runOnce(): Promise<ReapOutput> {
    return this.reap();
  }

  /** One trim round, whether due or not; null when this reaper was given no trim. */
  async trimOnce(): Promise<TrimOutput | null> {
    if (!this.trim) return null;
    // Cleared before the call: a job finished while it runs asks for the next tick's trim.
    this.trimPending = false;
    this.lastTrimAt = this.monotonicMs();
    const out = await this.trim();
    if (out.completed + out.cancelled + out.dead + out.workers + out.logs > 0) this.trimPending = true;
    return out;
  }

  private async trimIfDue(): Promise<void> {
    if (this.trimPending || this.monotonicMs() - this.lastTrimAt >= this.trimSweepMs) await this.trimOnce();
  }
}
