/**
 * What layout 1 (delayq 0.1) kept of a job besides its envelope: its bookkeeping (`meta`) and its
 * lease, parsed. migrate-read.lua reads them (src/operations/migrate-read.ts, LegacyJob); only
 * `delayq migrate` uses these.
 */
import type { ResolvedBackoff } from '../backoff.js';

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
