/**
 * Coalesces acks: the first goes out at once; those that finish while a call is in flight go
 * together in the next. No ack waits for a timer, and a busy worker pays one round trip (and one
 * script run) for many jobs.
 */
import type { AckJob, AckOutcome } from '../operations/ack.js';

interface Pending {
  job: AckJob;
  resolve: (outcome: AckOutcome) => void;
  reject: (err: unknown) => void;
}

/** Sends acks in batches through `send`. */
export class AckBatcher {
  private pending: Pending[] = [];
  private flushing = false;

  constructor(
    private readonly send: (jobs: AckJob[]) => Promise<AckOutcome[]>,
    private readonly maxBatch = 500,
  ) {}

  /** Ack one job; resolves with its own outcome. */
  ack(job: AckJob): Promise<AckOutcome> {
    return new Promise((resolve, reject) => {
      this.pending.push({ job, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, this.maxBatch);
        try {
          const outcomes = await this.send(batch.map((p) => p.job));
          batch.forEach((p, i) => {
            const outcome = outcomes[i];
            if (outcome) p.resolve(outcome);
            else p.reject(new Error(`ack: no outcome for job ${p.job.id}`));
          });
        } catch (err) {
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
