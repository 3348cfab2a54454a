/**
 * Which backoff a failed attempt waits by when one is given in more than one place. The rule
 * (README, "Retries"): the job's own backoff wins. It is fixed when the job is added — the add's
 * `backoff`, else the queue's `defaultJobOptions.backoff` — and stored with the job, so every
 * worker retries it alike. The worker's `backoff` (a spec or a function) applies to jobs that
 * carry none. A worker that was given a backoff and meets a job whose stored one wins logs a
 * warning, so the choice is never silent.
 */
import { backoffDelay, DEFAULT_BACKOFF, type BackoffFunction, type ResolvedBackoff } from '../backoff.js';
import type { RecordHeader } from '../record/index.js';
import type { Logger } from './logger.js';

/** Distinct stored backoffs warned about per worker, at most: a warning per job would flood the log. */
const MAX_WARNINGS = 10;

/** Chooses each failed attempt's retry delay. */
export class RetryPolicy {
  private readonly warned = new Set<string>();

  constructor(
    /** The worker's `backoff` option as given; undefined when the worker was given none. */
    private readonly workerBackoff: ResolvedBackoff | BackoffFunction | undefined,
    private readonly logger: Logger,
    private readonly queue: string,
  ) {}

  /** The delay before the next attempt of job `id`, whose record header is `header`, after `error`. */
  delayMs(id: string, header: Pick<RecordHeader, 'attempts' | 'backoff'>, error: unknown): number {
    const stored = header.backoff;
    if (stored === undefined) {
      return backoffDelay(this.workerBackoff ?? DEFAULT_BACKOFF, header.attempts, error);
    }
    if (this.workerBackoff !== undefined) this.warnOverridden(id, describe(stored), this.workerBackoff);
    return backoffDelay(stored, header.attempts, error);
  }

  private warnOverridden(id: string, stored: string, given: ResolvedBackoff | BackoffFunction): void {
    if (this.warned.has(stored) || this.warned.size >= MAX_WARNINGS) return;
    this.warned.add(stored);
    const mine = typeof given === 'function' ? 'a backoff function' : describe(given);
    this.logger.warn(
      `queue '${this.queue}': job ${id} carries its own backoff ${stored} (from its add options or the queue's defaultJobOptions), which wins over this worker's backoff (${mine}); the worker's backoff applies only to jobs added without one. Warned once per distinct backoff`,
    );
  }
}

/** A spec in the order people write it. */
function describe(spec: ResolvedBackoff): string {
  return JSON.stringify(spec, ['type', 'delay', 'max', 'jitter']);
}
