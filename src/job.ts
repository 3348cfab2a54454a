/**
 * The job a handler receives.
 */
import { encodeProgress } from './worker/progress-value.js';

/** A reporter that checks the value and writes nothing: a Job made outside a worker (tests). */
function checkOnly(id: string): (value: unknown) => Promise<void> {
  return async (value) => {
    encodeProgress(id, value);
  };
}

/** A claimed job as the handler sees it. */
export class Job<T> {
  /** @internal Jobs are made by the worker; handlers receive them. */
  constructor(
    /** The job's id. */
    readonly id: string,
    /** The payload, decoded (and upgraded to the current version). */
    readonly payload: T,
    /** This attempt's number, 1 for the first. */
    readonly attempt: number,
    /** Attempts allowed before the job goes to the dead set. */
    readonly maxAttempts: number,
    /** When the job was due. */
    readonly runAt: Date,
    /** When this attempt's lease started, by the server clock; claimedAt - runAt is the lateness. */
    readonly claimedAt: Date,
    /** The signal, made on first use: most handlers never look at it (one AbortController a job). */
    private readonly signalOf: () => AbortSignal,
    private readonly extender: (ms: number) => Promise<void>,
    private readonly reporter: (value: unknown) => Promise<void> = checkOnly(id),
    /** The job's group (`add(payload, { group })`), if it has one. */
    readonly group?: string,
  ) {}

  /** Aborted when the lease is lost, the job is cancelled or times out, or the worker shuts down; pass it to fetch() and friends. */
  get signal(): AbortSignal {
    return this.signalOf();
  }

  /**
   * Report how far the job has got (JSON data, at most 4 KiB encoded), shown by `queue.get(id)`,
   * `delayq show` and the dashboard while the job runs. Writes are coalesced (at most ~10 per second,
   * the last value wins), so calling it often is fine. Rejects with ValidationError or
   * ProgressTooLargeError for a value it cannot take (nothing written), and with LeaseLostError
   * when the lease is gone. The value is deleted when the attempt ends.
   */
  progress(value: unknown): Promise<void> {
    return this.reporter(value);
  }

  /**
   * Keep the lease for `ms` more from now (server clock). The worker already extends leases while
   * handlers run; call this before a step you know will take longer than leaseMs. Throws
   * LeaseLostError when the lease is already gone.
   */
  extendLease(ms: number): Promise<void> {
    return this.extender(ms);
  }
}
