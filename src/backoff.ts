/**
 * How long a failed job waits before its next attempt.
 */
import { ValidationError } from './errors.js';

/** A backoff that can be stored with a job (plain data). */
export type BackoffSpec =
  | { type: 'fixed'; delay: number; jitter?: boolean }
  | { type: 'exponential'; delay: number; max?: number; jitter?: boolean };

/** A backoff computed by the worker: attempt is the attempt that just failed (1 for the first). */
export type BackoffFunction = (attempt: number, error: unknown) => number;

/** A stored backoff, or (worker option only) a function. */
export type Backoff = BackoffSpec | BackoffFunction;

/** Used when neither the job nor the worker sets one: 1 s, doubling, capped at 1 h, with jitter. */
export const DEFAULT_BACKOFF: BackoffSpec = {
  type: 'exponential',
  delay: 1_000,
  max: 3_600_000,
  jitter: true,
};

/** Throws ValidationError unless `value` is a valid BackoffSpec; `name` is the option's path. */
export function validateBackoffSpec(value: unknown, name: string): BackoffSpec {
  const spec = value as Partial<BackoffSpec> | null;
  if (typeof spec !== 'object' || spec === null || (spec.type !== 'fixed' && spec.type !== 'exponential')) {
    throw new ValidationError(`${name} must be { type: 'fixed' | 'exponential', delay, max?, jitter? }`);
  }
  if (typeof spec.delay !== 'number' || !Number.isFinite(spec.delay) || spec.delay < 0) {
    throw new ValidationError(
      `${name}.delay must be a number of milliseconds >= 0, got ${String(spec.delay)}`,
    );
  }
  if (
    spec.type === 'exponential' &&
    spec.max !== undefined &&
    !(Number.isFinite(spec.max) && spec.max >= 0)
  ) {
    throw new ValidationError(`${name}.max must be a number of milliseconds >= 0, got ${String(spec.max)}`);
  }
  if (spec.jitter !== undefined && typeof spec.jitter !== 'boolean') {
    throw new ValidationError(`${name}.jitter must be true or false`);
  }
  return spec as BackoffSpec;
}

/**
 * The delay before the attempt after `attempt`. Jitter spreads retries over 50–100% of the delay,
 * so jobs that failed together (a downstream outage) do not all come back in the same millisecond.
 */
export function backoffDelay(
  backoff: Backoff,
  attempt: number,
  error: unknown,
  random = Math.random,
): number {
  if (typeof backoff === 'function') {
    const delay = backoff(attempt, error);
    return Number.isFinite(delay) && delay >= 0 ? Math.round(delay) : 0;
  }
  let delay = backoff.type === 'fixed' ? backoff.delay : backoff.delay * 2 ** Math.max(0, attempt - 1);
  if (backoff.type === 'exponential' && backoff.max !== undefined) delay = Math.min(delay, backoff.max);
  if (backoff.jitter) delay = delay / 2 + (random() * delay) / 2;
  return Math.round(delay);
}
