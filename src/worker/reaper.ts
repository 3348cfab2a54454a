/**
 * Returns jobs whose lease expired (their worker crashed, hung or was cut off) to the schedule or
 * the dead set. Every worker runs one; the script is idempotent, so no leader is needed.
 */
import type { ReapOutput } from '../operations/reap.js';
import { PeriodicDuty } from './duty.js';

/**
 * A periodic reap. Every claim reaps first, and an idle worker's claim loop already wakes at the
 * earliest lease deadline; so the tick reaps only while `busy()` says the worker has no free slot
 * (and so is not claiming). That keeps an idle worker's command rate down.
 */
export class Reaper {
  private readonly duty: PeriodicDuty;

  constructor(
    intervalMs: number,
    private readonly reap: () => Promise<ReapOutput>,
    busy: () => boolean,
    onError: (err: unknown) => void,
  ) {
    this.duty = new PeriodicDuty(
      intervalMs,
      async () => {
        if (busy()) await this.runOnce();
      },
      onError,
    );
  }

  start(): void {
    this.duty.start();
  }

  stop(): Promise<void> {
    return this.duty.stop();
  }

  /** One reap round. */
  runOnce(): Promise<ReapOutput> {
    return this.reap();
  }
}
