/**
 * The job a handler receives.
 */

/**
 * What a Job asks of the attempt it belongs to. One object per job (the worker's Attempt), rather
 * than three closures per job: the worker makes one Job per claimed job. Not exported by the
 * package (only the worker and delayq/testing make Jobs), but kept in job.d.ts, unlike the
 * members tsconfig.build.json strips: worker/attempt.d.ts implements it.
 */
export interface JobHost {
  /** Made on first use: most handlers never look at it (one AbortController a job). */
  readonly signal: AbortSignal;
  extendLease(ms: number): Promise<void>;
  reportProgress(value: unknown): Promise<void>;
  writeLog(line: string): Promise<void>;
  /** The results of a flow parent's children (queue.addFlow). */
  childResults(): Promise<Record<string, unknown>>;
}

/** A claimed job as the handler sees it. */
export class Job<T> {
  // A private name, not a property: JSON.stringify(job) and Object.keys(job) never reach the worker.
  readonly #host: JobHost;

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
    /**
     * When this attempt started, by the server clock; claimedAt - runAt is the lateness. Never
     * before runAt: the lease's start, or for a job the worker leased just ahead of its due time
     * (at most 2 ms), the moment its handler started by the worker's lower bound of that clock
     * (the lease's own start is `queue.get(id).lease.startedAt`).
     */
    readonly claimedAt: Date,
    host: JobHost,
    /** The job's group (`add(payload, { group })`), if it has one. */
    readonly group?: string,
  ) {
    this.#host = host;
  }

  /** Aborted when the lease is lost, the job is cancelled or times out, or the worker shuts down; pass it to fetch() and friends. */
  get signal(): AbortSignal {
    return this.#host.signal;
  }

  /**
   * Report how far the job has got (JSON data, at most 4 KiB encoded), shown by `queue.get(id)`,
   * `delayq show` and the dashboard while the job runs. Writes are coalesced (at most ~10 per second,
   * the last value wins), so calling it often is fine. Rejects with ValidationError or
   * ProgressTooLargeError for a value it cannot take (nothing written), and with LeaseLostError
   * when the lease is gone. The value is deleted when the attempt ends.
   */
  progress(value: unknown): Promise<void> {
    return this.#host.reportProgress(value);
  }

  /**
   * Add a line to the job's log: a few short lines of this attempt's story, kept with the job
   * while it is kept (also after it completed or died) and shown by `queue.get(id).logs`,
   * `delayq show` and the dashboard's inspector. At most 20 lines per attempt and 50 per job (a
   * later attempt's lines push out the oldest attempts'), each one line of text of at most 512
   * bytes of UTF-8. Rejects with ValidationError (not one line of text) or LogLimitError (over a
   * cap), writing nothing, and with LeaseLostError when the lease is gone.
   */
  log(line: string): Promise<void> {
    return this.#host.writeLog(line);
  }

  /**
   * In a flow's parent (queue.addFlow): what each child's handler returned, by child id, decoded
   * by the queue's codec. A child whose handler returned nothing maps to undefined; a child that
   * died or was cancelled, which the parent ignores (onChildFailure 'ignore'), is left out. Any
   * other job gets `{}`.
   */
  childResults(): Promise<Record<string, unknown>> {
    return this.#host.childResults();
  }

  /**
   * Keep the lease for `ms` more from now (server clock). The worker already extends leases while
   * handlers run; call this before a step you know will take longer than leaseMs. Throws
   * LeaseLostError when the lease is already gone.
   */
  extendLease(ms: number): Promise<void> {
    return this.#host.extendLease(ms);
  }
}
