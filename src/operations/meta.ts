/**
 * The per-job bookkeeping scripts keep in the `meta` hash (JSON, read and written by Lua too).
 */
import type { ResolvedBackoff } from '../backoff.js';

/**
 * Bookkeeping of one job: a = attempts started, m = max attempts, r = due time, b = backoff,
 * o = timeout ms of one attempt, t = last failed token.
 */
export interface JobMeta {
  a: number;
  m: number;
  r?: number;
  b?: ResolvedBackoff;
  o?: number;
  t?: string;
}

/** Parse a meta record; a record that is not one is an error, never a default. */
export function parseMeta(json: string, id: string): JobMeta {
  const value: unknown = JSON.parse(json);
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof (value as JobMeta).a !== 'number' ||
    typeof (value as JobMeta).m !== 'number'
  ) {
    throw new Error(`job ${id}: malformed bookkeeping record ${json}`);
  }
  return value as JobMeta;
}
