/**
 * Durations as users write them. One rule for every option: a name ending in `Ms` (`leaseMs`,
 * `timeoutMs`) takes a number of milliseconds; any other duration (`delay`, `every`, `grace`,
 * `backoff.delay`, `limit.per`, ...) takes a number of milliseconds or a string such as '500ms',
 * '90s', '10m', '1h30m', '2d'.
 */
import { ValidationError } from './errors.js';

/** Milliseconds, or a duration string like '1h30m'. */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/y;

/**
 * Parse `value` into whole milliseconds (>= 0); `name` is the option's name for error messages,
 * `path` its path in ValidationError.issues when the message puts more before it.
 */
export function parseDuration(value: unknown, name: string, path = name): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) {
      throw new ValidationError(`${name} must be a finite number of milliseconds >= 0, got ${value}`, path);
    }
    return Math.round(value);
  }
  if (typeof value !== 'string') {
    throw new ValidationError(
      `${name} must be milliseconds or a duration string such as '90s' or '1h30m', got ${describe(value)}`,
      path,
    );
  }
  const text = value.trim();
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < text.length) {
    const start = PART.lastIndex;
    const match = PART.exec(text);
    if (!match) {
      throw new ValidationError(
        `${name}: cannot read ${JSON.stringify(value)} at ${JSON.stringify(text.slice(start))}; use numbers with units ms, s, m, h, d, w, e.g. '1h30m'`,
        path,
      );
    }
    total += Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? Number.NaN);
  }
  if (text.length === 0 || !Number.isFinite(total)) {
    throw new ValidationError(
      `${name}: ${JSON.stringify(value)} is not a duration; use e.g. '90s' or '1h30m'`,
      path,
    );
  }
  return Math.round(total);
}

/**
 * Read an option whose name ends in `Ms`: a finite number of milliseconds >= 0, rounded. A string
 * is refused, naming the number to write instead, so `leaseMs: '15s'` is not taken as 15 ms nor
 * silently as 15 s.
 */
export function parseMs(value: unknown, name: string, path = name): number {
  if (typeof value === 'string') {
    let hint = '';
    try {
      hint = `: write ${parseDuration(value, name, path)}`;
    } catch {
      // Not a duration string either; the message below says what is expected.
    }
    throw new ValidationError(
      `${name} takes a number of milliseconds (options named ...Ms do), got ${JSON.stringify(value)}${hint}`,
      path,
    );
  }
  return parseDuration(value, name, path);
}

/** A short description of an unexpected value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value instanceof Date) return `Date(${String(value)})`;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return `${typeof value} ${String(value)}`;
  }
  return typeof value;
}
