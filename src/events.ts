/**
 * The queue's event stream: what happened to which job and when, written atomically by the same
 * scripts that change job state, read back with `queue.events()`.
 */
import { ValidationError, UnsupportedServerError } from './errors.js';
import { assertKnownOptions } from './option-names.js';
import type { Capabilities } from './redis/capabilities.js';

/**
 * The `events` option: keep about `maxLen` recent events (default 10,000), or false for none.
 * Failure events (failed, dead, lease-lost, cancelled) and snoozed are written by default (`only:
 * 'failures'`); `only: 'all'` adds the routine ones every job writes (added, claimed, completed,
 * released, rescheduled, retried), at about 3.4 µs per event: they were the largest single cost of
 * the hot path (docs/ARCHITECTURE.md §7). The counters (`dq:{q}:n`) count those without them.
 */
export type EventsOption = { maxLen: number; only?: 'all' | 'failures' } | false;

const EVENTS_OPTION_KEYS: ReadonlySet<string> = new Set(['maxLen', 'only']);

/** Default number of events kept per queue. */
export const DEFAULT_EVENTS_MAX_LEN = 10_000;

/** What happened. */
export type JobEventType =
  | 'added'
  | 'claimed'
  | 'completed'
  | 'failed'
  | 'dead'
  | 'cancelled'
  | 'rescheduled'
  | 'replaced'
  | 'released'
  | 'retried'
  | 'lease-lost'
  /** A handler threw a SnoozeError: the attempt did not count; fields attempt, runAt. */
  | 'snoozed';

/** One event as read from the stream. Times are epoch ms by the Redis clock. */
export interface JobEvent {
  /** The stream entry id: pass it as `from` to resume after this event. */
  streamId: string;
  type: JobEventType;
  jobId: string;
  /** When it happened. */
  at: number;
  /** Further fields by type: attempt, runAt, retryAt, reason, worker, runMs, lease. */
  fields: Record<string, string>;
}

/**
 * Validate the option (once) into the number the scripts take: 0 is off; N > 0 keeps about N of
 * every event (only: 'all'); -N keeps about N failure events (only: 'failures', the default).
 */
export function validateEventsOption(option: EventsOption | undefined): number | undefined {
  if (option === undefined) return undefined;
  if (option === false) return 0;
  if (typeof option === 'object' && option !== null) {
    assertKnownOptions(option, EVENTS_OPTION_KEYS, 'events key', { path: 'events' });
  }
  if (
    typeof option !== 'object' ||
    !Number.isInteger(option.maxLen) ||
    option.maxLen < 1 ||
    !(option.only === undefined || option.only === 'all' || option.only === 'failures')
  ) {
    throw new ValidationError(
      `events must be false or { maxLen: a whole number >= 1, only?: 'all' | 'failures' }, got ${JSON.stringify(option)}`,
      'events',
    );
  }
  return option.only === 'all' ? option.maxLen : -option.maxLen;
}

/**
 * The cap to use on this server: as asked, or by default failure events only (-10,000) when the
 * server has streams.
 */
export function eventsCapFor(requested: number | undefined, caps: Capabilities): number {
  const hasStreams = caps.commands.has('xadd');
  if (requested === undefined) return hasStreams ? -DEFAULT_EVENTS_MAX_LEN : 0;
  if (requested !== 0 && !hasStreams) {
    throw new UnsupportedServerError(
      `events need Redis streams (XADD), which Redis ${caps.version} here lacks; set events: false or use Redis >= 5`,
    );
  }
  return requested;
}

/** Parse one XREAD/XRANGE entry ([id, [field, value, ...]]). */
export function parseEvent(entry: [string, string[]]): JobEvent {
  const [streamId, flat] = entry;
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
  const { type = '', id = '', at = '0', ...rest } = fields;
  return { streamId, type: type as JobEventType, jobId: id, at: Number(at), fields: rest };
}

/** The events cap as a person would write the option. */
export function describeEvents(cap: number): string {
  if (cap === 0) return 'false';
  return cap > 0 ? `{ maxLen: ${cap}, only: 'all' }` : `{ maxLen: ${-cap} }`;
}
