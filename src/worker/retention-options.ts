/**
 * The worker options `keepCompleted` and `rememberCompleted`: how long completed jobs stay
 * visible, as trim.lua's bound (a count and an age), and whether their records keep the handler's
 * result. Validated once here; an error names the exact option.
 */
import { parseDuration, type Duration } from '../duration.js';
import { ValidationError } from '../errors.js';
import { assertOptionObject } from '../option-names.js';
import type { Retention } from '../operations/trim.js';

/** The two options as WorkerOptions declares them. */
export interface RetentionOptions {
  keepCompleted?: { count: number; age?: Duration };
  rememberCompleted?: { count?: number; age?: Duration } | false;
}

/** Completed jobs trimmed as soon as trim runs (about a second). */
const KEEP_NONE: Retention = { count: 0, ageMs: 1 };

const RETENTION_KEYS: ReadonlySet<string> = new Set(['count', 'age']);

/** The completed set's bound, and whether completed records keep results; throws ValidationError. */
export function resolveRetention(options: RetentionOptions): {
  keepCompleted: Retention;
  keepResults: boolean;
} {
  let keepCompleted = resolveRememberCompleted(options.rememberCompleted);
  if (options.keepCompleted !== undefined) {
    assertOptionObject(options.keepCompleted, RETENTION_KEYS, 'keepCompleted');
    const { count, age } = options.keepCompleted;
    if (!Number.isInteger(count) || count < 0) {
      throw new ValidationError(
        `keepCompleted.count must be a whole number >= 0, got ${String(count)}`,
        'keepCompleted.count',
      );
    }
    const ageMs = age === undefined ? 0 : parseDuration(age, 'keepCompleted.age');
    // A count of 0 keeps none; trim.lua reads 0 as "no bound", so none is "older than 1 ms".
    keepCompleted = count === 0 ? KEEP_NONE : { count, ageMs };
  }
  // Results are kept with the completed jobs the user asked to keep, not with the ids remembered.
  const keepResults = options.keepCompleted !== undefined && keepCompleted.count > 0;
  return { keepCompleted, keepResults };
}

function resolveRememberCompleted(option: RetentionOptions['rememberCompleted']): Retention {
  if (option === false) return KEEP_NONE;
  if (option !== undefined) assertOptionObject(option, RETENTION_KEYS, 'rememberCompleted');
  const count = option?.count ?? 100_000;
  if (!Number.isInteger(count) || count < 0) {
    throw new ValidationError(
      `rememberCompleted.count must be a whole number >= 0, got ${String(count)}`,
      'rememberCompleted.count',
    );
  }
  const ageMs = parseDuration(option?.age ?? '5m', 'rememberCompleted.age');
  // A resend comes after a reconnect: an age shorter than a second would not cover one.
  if (ageMs < 1_000)
    throw new ValidationError(
      `rememberCompleted.age must be at least 1 s, got ${ageMs} ms`,
      'rememberCompleted.age',
    );
  return { count, ageMs };
}
