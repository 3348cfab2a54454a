/**
 * The Job a batch handler receives: a Job with one more call, `fail(error)`, which fails this job
 * alone while the others of its batch go on. The rest of a batch's fate is the handler's: resolving
 * completes every job not failed alone, throwing fails them all.
 */
import { Job, type JobHost } from '../job.js';

/** A job of a batch (the worker option `batch`): a Job that can be failed alone. */
export class BatchJob<T> extends Job<T> {
  /** @internal Made by the worker for each job of a batch. */
  constructor(
    id: string,
    payload: T,
    attempt: number,
    maxAttempts: number,
    runAt: Date,
    claimedAt: Date,
    host: JobHost,
    group: string | undefined,
    private readonly failer: (error: unknown) => Promise<void>,
  ) {
    super(id, payload, attempt, maxAttempts, runAt, claimedAt, host, group);
  }

  /**
   * Fail this job alone, now: it is retried by its own attempts and backoff (an UnrecoverableError
   * sends it to the dead set at once), and the handler's result no longer applies to it. Resolves
   * once the failure is recorded; a second call is the first one's promise. Call it while the batch
   * handler runs: once the handler has returned, the batch's fate is sent and this rejects.
   */
  fail(error: unknown): Promise<void> {
    return this.failer(error);
  }
}
