/**
 * SnoozeError: a handler defers its job without spending an attempt, for a receiver that said
 * "not now" (an HTTP 429 or 503 with Retry-After). The attempt ends uncounted and the job is due
 * again after the delay (release.lua, as a snooze: event `snoozed`, counter `snoozed`).
 */
import { parseDuration, type Duration } from './duration.js';
import { DelayqError, ValidationError } from './errors.js';

/** The longest snooze: a year. A Retry-After further off than that is almost surely a mistake. */
export const MAX_SNOOZE_MS = 365 * 86_400_000;

/** Thrown by a handler: the job is due again after `delay`; this attempt does not count. */
export class SnoozeError extends DelayqError {
  /** How long after the attempt ends the job is due again, in ms. */
  readonly delayMs: number;

  /**
   * `delay`: milliseconds or a duration string ('30s', '1h30m'), as `add`'s delay. Anything else,
   * or more than a year, is a ValidationError saying what to write.
   */
  constructor(delay: Duration, options?: { cause?: unknown; message?: string }) {
    const delayMs = snoozeDelayMs(delay);
    super('DELAYQ_SNOOZE', options?.message ?? `snoozed for ${delayMs} ms`, options);
    this.delayMs = delayMs;
  }
}

function snoozeDelayMs(delay: unknown): number {
  let ms: number;
  try {
    ms = parseDuration(delay, 'SnoozeError delay', 'delay');
  } catch {
    // One message for every wrong delay, with what to write.
    throw new ValidationError(
      `SnoozeError needs a delay in milliseconds (a number >= 0) or a duration string, as add's delay: new SnoozeError(30_000) or new SnoozeError('30s'); got ${describe(delay)}`,
      'delay',
    );
  }
  if (ms > MAX_SNOOZE_MS) {
    throw new ValidationError(
      `SnoozeError delay is at most a year (${MAX_SNOOZE_MS} ms), got ${ms} ms; for a later date, cancel the job and add it again with runAt`,
      'delay',
    );
  }
  return ms;
}

/**
 * The delay the handler asked for when `error` is a SnoozeError, or one from another copy of the
 * package (a bundled dependency) that carries its code and a valid delayMs; else undefined.
 */
export function snoozeDelay(error: unknown): number | undefined {
  if (error instanceof SnoozeError) return error.delayMs;
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, delayMs } = error as { code?: unknown; delayMs?: unknown };
  if (code !== 'DELAYQ_SNOOZE') return undefined;
  if (typeof delayMs !== 'number' || !Number.isInteger(delayMs) || delayMs < 0 || delayMs > MAX_SNOOZE_MS) {
    return undefined;
  }
  return delayMs;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || value === undefined || value === null) return String(value);
  return typeof value;
}
