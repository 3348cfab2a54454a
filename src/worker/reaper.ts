/**
 * The Reaper duty: ends leases whose deadline passed (their worker crashed, hung or was cut off),
 * and keeps finished jobs within their retention (trim, about once a second). Every worker runs
 * one; both scripts are idempotent, so no leader is needed.
 */
import type { ReapOutput } from '../operations/reap.js';
import type { TrimOutput } from '../operations/trim.js';
import { PeriodicDuty } from './duty.js';

/** How often finished jobs are trimmed: often enough that a burst never piles up far past its bound. */
export const TRIM_INTERVAL_MS = 1_000;

/**
 * A periodic reap and a periodic trim. Every claim reaps first, and an idle worker's claim loop
 * already wakes at the earliest lease deadline; so the tick reaps only while `busy()` says the
 * worker has no free slot (and so is not claiming). That keeps an idle worker's command rate down.
 * The trim runs whatever the worker does: the hot path never trims.
 */
export class Reaper {
  private readonly reapDuty: PeriodicDuty;
  private readonly trimDuty: PeriodicDuty | null;

  constructor(
    intervalMs: number,
    private readonly reap: () => Promise<ReapOutput>,
    busy: () => boolean,
    onError: (err: unknown) => void,
    /** Trims every partition once; absent: this worker does not trim. */
    private readonly trim?: () => Promise<TrimOutput>,
    trimIntervalMs: number = TRIM_INTERVAL_MS,
  ) {
    this.reapDuty = new PeriodicDuty(
      intervalMs,
      async () => {
        if (busy()) await this.runOnce();
      },
      onError,
    );
    this.trimDuty = trim
      ? new PeriodicDuty(
          trimIntervalMs,
          async () => {
            await trim();
          },
          onError,
        )
      : null;
  }

  start(): void {
    this.reapDuty.start();
    this.trimDuty?.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.reapDuty.stop(), this.trimDuty?.stop()]);
  }

  /** One reap round. */
  runOnce(): Promise<ReapOutput> {
    return this.reap();
  }

  /** One trim round; null when this reaper was given no trim. */
  async trimOnce(): Promise<TrimOutput | null> {
    return this.trim ? this.trim() : null;
  }
}
