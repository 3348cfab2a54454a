/**
 * How long a failed job waits before its next attempt.
 */
import { parseDuration, type Duration } from './duration.js';
import { ValidationError } from './errors.js';
import { assertKnownOptions } from './option-names.js';

/**
 * A backoff given as plain data (stored with each job). `delay` and `max` are durations: a number
 * of ms or a string such as '30s'.
 */
export type BackoffSpec =
  | { type: 'fixed'; delay: Duration; jitter?: boolean }
  | { type: 'exponential'; delay: Duration; max?: Duration; jitter?: boolean };

/** A BackoffSpec after validation, in ms: what is stored with a job (and read by other languages). */
export type ResolvedBackoff =
  | { type: 'fixed'; delay: number; jitter?: boolean }
  | { type: 'exponential'; delay: number; max?: number; jitter?: boolean };

/** A backoff computed by the worker: attempt is the attempt that just failed (1 for the first). */
export type BackoffFunction = (attempt: number, error: unknown) => number;

/** A stored backoff, or (worker option only) a function. */
export type Backoff = BackoffSpec | BackoffFunction;

/** Used when neither the job nor the worker sets one: 1 s, doubling, capped at 1 h, with jitter. */
export const DEFAULT_BACKOFF: ResolvedBackoff = {
  type: 'exponential',
  delay: 1_000,
  max: 3_600_000,
  jitter: true,
};

/** The keys of a backoff spec of each type ('fixed' has no max). */
const FIXED_KEYS: ReadonlySet<string> = new Set(['type', 'delay', 'jitter']);
const EXPONENTIAL_KEYS: ReadonlySet<string> = new Set(['type', 'delay', 'max', 'jitter']);

/**
 * Validate `value` as a BackoffSpec and return it with its durations in ms; throws
 * ValidationError otherwise. `name` is the option's path.
 */
export function validateBackoffSpec(value: unknown, name: string, path = name): ResolvedBackoff {
  const spec = value as Partial<BackoffSpec> | null;
  if (typeof spec !== 'object' || spec === null || (spec.type !== 'fixed' && spec.type !== 'exponential')) {
    throw new ValidationError(
      `${name} must be { type: 'fixed' | 'exponential', delay, max?, jitter? }`,
      path,
    );
  }
  assertKnownOptions(spec, spec.type === 'fixed' ? FIXED_KEYS : EXPONENTIAL_KEYS, `${name} key`, {
    path,
  });
  if (spec.delay === undefined) {
    throw new ValidationError(
      `${name}.delay is missing: a number of ms or a duration such as '30s'`,
      `${path}.delay`,
    );
  }
  const delay = parseDuration(spec.delay, `${name}.delay`, `${path}.delay`);
  if (spec.jitter !== undefined && typeof spec.jitter !== 'boolean') {
    throw new ValidationError(`${name}.jitter must be true or false`, `${path}.jitter`);
  }
  const jitter = spec.jitter === undefined ? {} : { jitter: spec.jitter };
  if (spec.type === 'fixed') return { type: 'fixed', delay, ...jitter };
  const given = (spec as { max?: Duration }).max;
  const max = given === undefined ? {} : { max: parseDuration(given, `${name}.max`, `${path}.max`) };
  return { type: 'exponential', delay, ...max, ...jitter };
}

/**
 * The delay before the attempt after `attempt`. Jitter spreads retries over 50–100% of the delay,
 * so jobs that failed together (a downstream outage) do not all come back in the same millisecond.
 */
export function backoffDelay(
  backoff: ResolvedBackoff | BackoffFunction,
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
