/**
 * When a repeating schedule fires: a cron pattern in a time zone (computed by croner), or a fixed
 * period. Both become a Timetable that answers "the next occurrence after t" and "the latest one
 * at or before t", in epoch ms.
 */
import { Cron } from 'croner';
import { describe, parseDuration, type Duration } from '../duration.js';
import { ValidationError } from '../errors.js';

/** When a schedule fires: `{ cron, tz }` (tz: an IANA zone, default UTC) or `{ every }`. */
export type ScheduleSpec = { cron: string; tz?: string } | { every: Duration };

/** A spec after validation, as stored in Redis: `every` in ms. */
export type ResolvedSpec = { cron: string; tz?: string } | { every: number };

/** The shortest `every` accepted: shorter periods would mostly measure Redis round trips. */
export const MIN_EVERY_MS = 100;

/** Validate a spec; throws ValidationError naming the wrong field. */
export function resolveSpec(spec: unknown, where: string): ResolvedSpec {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new ValidationError(`${where}: the spec must be { cron, tz? } or { every }, got ${describe(spec)}`);
  }
  const fields = spec as Record<string, unknown>;
  const hasCron = fields['cron'] !== undefined;
  const hasEvery = fields['every'] !== undefined;
  if (hasCron === hasEvery) {
    throw new ValidationError(`${where}: give exactly one of cron or every`);
  }
  const known = hasCron ? ['cron', 'tz'] : ['every'];
  for (const key of Object.keys(fields)) {
    if (!known.includes(key)) {
      throw new ValidationError(
        `${where}: unknown spec field '${key}'; with ${known[0]} use ${known.join(', ')}`,
      );
    }
  }
  if (hasEvery) {
    const every = parseDuration(fields['every'], `${where}: every`);
    if (every < MIN_EVERY_MS) {
      throw new ValidationError(`${where}: every must be at least ${MIN_EVERY_MS} ms, got ${every} ms`);
    }
    return { every };
  }
  const cron = fields['cron'];
  if (typeof cron !== 'string' || cron.trim() === '') {
    throw new ValidationError(`${where}: cron must be a non-empty pattern string, got ${describe(cron)}`);
  }
  const tz = fields['tz'];
  if (tz !== undefined && (typeof tz !== 'string' || !isTimeZone(tz))) {
    throw new ValidationError(
      `${where}: tz must be an IANA time zone such as 'Europe/Paris' or 'UTC', got ${describe(tz)}`,
    );
  }
  const resolved: ResolvedSpec = tz === undefined ? { cron } : { cron, tz };
  let timetable: Timetable;
  try {
    timetable = timetableOf(resolved);
  } catch (err) {
    throw new ValidationError(
      `${where}: cron ${JSON.stringify(cron)} is not a valid pattern (${err instanceof Error ? err.message : String(err)}); use 5 fields (minute hour day month weekday) or 6 with seconds first`,
    );
  }
  if (timetable.next(Date.now()) === null) {
    throw new ValidationError(`${where}: cron ${JSON.stringify(cron)} never fires`);
  }
  return resolved;
}

/** Occurrences of a schedule, in epoch ms. */
export interface Timetable {
  /** The first occurrence strictly after `t`, or null when there is none. */
  next(t: number): number | null;
  /** The latest occurrence at or before `t`, or null when there is none. */
  latestAtOrBefore(t: number): number | null;
}

const timetables = new Map<string, Timetable>();

/** The timetable of a resolved spec (cached: croner parses a pattern once). */
export function timetableOf(spec: ResolvedSpec): Timetable {
  const cacheKey = JSON.stringify(spec);
  let timetable = timetables.get(cacheKey);
  if (!timetable) {
    timetable = 'every' in spec ? everyTimetable(spec.every) : cronTimetable(spec.cron, spec.tz);
    if (timetables.size > 1_000) timetables.clear();
    timetables.set(cacheKey, timetable);
  }
  return timetable;
}

/**
 * `every` occurrences are the multiples of the period since the epoch: every process computes the
 * same ones without agreeing on a start, and re-declaring a schedule does not shift it.
 */
function everyTimetable(period: number): Timetable {
  return {
    next: (t) => (Math.floor(t / period) + 1) * period,
    latestAtOrBefore: (t) => Math.floor(t / period) * period,
  };
}

function cronTimetable(pattern: string, tz: string | undefined): Timetable {
  // No year field (5 or 6 parts), so a pattern that fires once fires forever. Day-of-month and
  // day-of-week combine with OR, as in Vixie cron. Daylight-saving gaps and repeats follow
  // croner's rules (fixed-time jobs run once, after a gap; interval jobs skip the gap).
  const cron = new Cron(pattern, { timezone: tz ?? 'UTC', mode: '5-or-6-parts', paused: true });
  return {
    next: (t) => cron.nextRun(new Date(t))?.getTime() ?? null,
    // previousRuns is strictly before its reference; cron times are whole seconds.
    latestAtOrBefore: (t) => cron.previousRuns(1, new Date(t + 1))[0]?.getTime() ?? null,
  };
}

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
