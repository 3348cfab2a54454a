/**
 * A job as layout 1 (delayq 0.1) stored it, read by migrate-read.lua: its envelope, its bookkeeping
 * (`meta`), its lease, its last error and the sets it is in. Only `delayq migrate` reads these.
 */
import type { ResolvedBackoff } from '../backoff.js';

/** Everything layout 1 holds about one id; null where it holds nothing. */
export interface LegacyJob {
  readonly id: string;
  /** The v1 envelope (`jobs`), encoded by the queue's codec. */
  readonly envelope: Buffer | null;
  /** The bookkeeping JSON (`meta`) exactly as stored: migrate-write compares it. */
  readonly meta: string | null;
  /** The lease string (`leases`) "token|startMs|workerId" exactly as stored. */
  readonly lease: string | null;
  /** The last error JSON (`errors`). */
  readonly error: string | null;
  /** Due time in `schedule` (waiting). */
  readonly due: number | null;
  /** Lease deadline in `active` (running). */
  readonly deadline: number | null;
  /** Died at, in `dead`. */
  readonly died: number | null;
  /** Completed at, in `completed` (kept completed jobs, data still in `jobs`). */
  readonly completed: number | null;
  /** Completed at, in `done` (ids of recently completed jobs, no data). */
  readonly done: number | null;
  /** Cancelled at, in `x` (ids only; the same key in layout 2). */
  readonly cancelled: number | null;
  /** The id has a layout-2 record already (an earlier chunk or phase wrote it). */
  readonly hasRecord: boolean;
}

/** Layout 1's bookkeeping of one job (src/scripts/includes/prelude.lua of delayq 0.1). */
export interface LegacyMeta {
  /** Attempts started. */
  readonly a: number;
  /** Max attempts. */
  readonly m: number;
  /** Due time of the current or last scheduling. */
  readonly r?: number;
  readonly b?: ResolvedBackoff;
  /** Timeout ms of one attempt. */
  readonly o?: number;
  /** Token of the last failed attempt, "<counter>.<claim ms>". */
  readonly t?: string;
}

/** A layout-1 lease, "token|startMs|workerId" (the worker id last: it may contain "|"). */
export interface LegacyLease {
  readonly token: string;
  readonly startedAt: number;
  readonly worker: string;
}

/** Parse a meta string; null when it is not a layout-1 meta (the job is then buried, not guessed). */
export function parseLegacyMeta(text: string): LegacyMeta | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const meta = value as Record<string, unknown>;
  if (typeof meta.a !== 'number' || typeof meta.m !== 'number') return null;
  return value as LegacyMeta;
}

/** Parse a lease string; null when it is not one. */
export function parseLegacyLease(text: string): LegacyLease | null {
  const match = /^([^|]*)\|(\d+)\|(.*)$/s.exec(text);
  if (!match) return null;
  return { token: match[1]!, startedAt: Number(match[2]), worker: match[3]! };
}

/** The claim time in a layout-1 token "<counter>.<claim ms>", or null. */
export function claimTimeOfToken(token: string): number | null {
  const match = /^\d+\.(\d+)$/.exec(token);
  return match ? Number(match[1]) : null;
}
