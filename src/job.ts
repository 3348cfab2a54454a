/**
 * The job a handler receives.
 */

/** A claimed job as the handler sees it. */
export class Job<T> {
  /** Aborted when the lease is lost or the worker shuts down; pass it to fetch() and friends. */
  readonly signal: AbortSignal;

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
    signal: AbortSignal,
    private readonly extender: (ms: number) => Promise<void>,
  ) {
    this.signal = signal;
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
