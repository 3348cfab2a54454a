/**
 * Returns jobs whose lease expired (their worker crashed, hung or was cut off) to the schedule or
 * the dead set. Every worker runs one; the script is idempotent, so no leader is needed.
 */
import type { ReapOutput } from '../operations/reap.js';
import { PeriodicDuty } from './duty.js';

/** A periodic reap. Claims reap too; this covers workers too busy to claim. */
export class Reaper {
  private readonly duty: PeriodicDuty;

  constructor(
    intervalMs: number,
    private readonly reap: () => Promise<ReapOutput>,
    onError: (err: unknown) => void,
  ) {
    this.duty = new PeriodicDuty(intervalMs, async () => void (await this.runOnce()), onError);
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
