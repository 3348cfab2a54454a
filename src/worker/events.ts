/** The events a Worker emits (src/worker.ts). */
import type { Job } from '../job.js';

/** Events a Worker emits. */
export interface WorkerEvents<T> {
  /** The handler resolved and the ack was applied. */
  completed: [job: Job<T>, result: unknown];
  /** The handler failed; the job runs again at `retryAt`. */
  failed: [job: Job<T>, error: Error, retryAt: Date];
  /** The job is in the dead set. `job` is null when its payload could not be decoded. */
  dead: [job: Job<T> | null, error: Error, id: string];
  /** Something went wrong outside a handler (Redis errors, a lost lease, a refused late result). */
  error: [error: Error];
}
