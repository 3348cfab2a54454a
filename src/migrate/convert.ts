/**
 * One layout-1 job as layout 2 stores it (docs/ARCHITECTURE.md §10): its record, the set it goes
 * in with the same score, and its last error. Pure: migrate-write.lua applies the result.
 */
import {
  CANCELLED_RECORD,
  COMPLETED_RECORD,
  encodeRecord,
  NEW_JOB_HEADER,
  type RecordHeader,
} from '../record/index.js';
import type { LegacyJob } from '../operations/migrate-read.js';
import type { JobWrite } from '../operations/migrate-write.js';
import { claimTimeOfToken, parseLegacyLease, parseLegacyMeta, type LegacyMeta } from './legacy-job.js';

/** A v1 envelope's payload, encoded as layout 2 stores it, and the envelope fields the header keeps. */
export interface ConvertedPayload {
  readonly payload: Buffer;
  readonly version: number;
  readonly createdAt?: number;
  readonly traceparent?: string;
}

/** Decodes a v1 envelope with the queue's codec and encodes its payload alone; throws when it cannot. */
export type PayloadConverter = (envelope: Buffer, id: string) => ConvertedPayload;

/** Where a converted job goes: waiting, running, dead, completed, cancelled, or nowhere. */
export type Target = 's' | 'a' | 'd' | 'c' | 'x' | '';

/** What migrate-write.lua is given for one job (JobWrite), with where it goes and why, when buried. */
export interface Conversion extends JobWrite {
  readonly target: Target;
  /** Why the job is buried instead of converted as it was, for the report; null when it was not. */
  readonly problem: string | null;
}

/** Largest value of the header's uint16 fields (attempts, claims, max attempts). */
const UINT16_MAX = 0xffff;
/** Largest value of the header's uint32 fields (backoff delay and max, timeout). */
const UINT32_MAX = 0xffffffff;

/**
 * The conversion of `job`. Its layout-1 state decides, in this order: running (active), dead,
 * completed and kept, waiting (schedule), then ids only known as done or cancelled, then job data in
 * no set (waiting again at its last due time: nothing is dropped). A job whose envelope cannot be
 * decoded, or whose bookkeeping is unreadable, is buried with the reason and its stored bytes as
 * payload, so it stays visible and nothing is guessed.
 */
export function convertJob(job: LegacyJob, payloads: PayloadConverter, now: number): Conversion {
  const base = { id: job.id, meta: job.meta ?? '', lease: job.lease ?? '', member: '', problem: null };
  if (job.envelope === null) {
    if (job.completed !== null || job.done !== null) {
      return { ...base, record: COMPLETED_RECORD, target: 'c', score: job.completed ?? job.done!, error: '' };
    }
    if (job.cancelled !== null) {
      return { ...base, record: CANCELLED_RECORD, target: 'x', score: job.cancelled, error: '' };
    }
    // Bookkeeping without data: layout 1 would have buried it as MissingJob at its claim.
    if (job.due !== null || job.deadline !== null || job.died !== null) {
      return bury(job, base, Buffer.alloc(0), 'job data missing from Redis (removed outside delayq)', now);
    }
    return { ...base, record: null, target: '', score: 0, error: '' };
  }
  if (job.completed !== null && job.deadline === null) {
    return { ...base, record: COMPLETED_RECORD, target: 'c', score: job.completed, error: '' };
  }
  const meta = job.meta === null ? null : parseLegacyMeta(job.meta);
  if (meta === null) {
    return bury(job, base, job.envelope, `its bookkeeping (meta) is unreadable: ${String(job.meta)}`, now);
  }
  let converted: ConvertedPayload;
  try {
    converted = payloads(job.envelope, job.id);
  } catch (err) {
    return bury(job, base, job.envelope, err instanceof Error ? err.message : String(err), now);
  }
  const header = headerOf(meta, converted, job.error !== null);
  if (job.deadline !== null) {
    const lease = job.lease === null ? null : parseLegacyLease(job.lease);
    const claimedAt = lease?.startedAt ?? 0;
    const running = withClaim(header, meta, claimedAt, meta.r ?? claimedAt);
    return {
      ...base,
      record: encodeRecord(running, converted.payload),
      target: 'a',
      score: job.deadline,
      member: `${running.claims}.${running.claimedAt}|${job.id}`,
      error: job.error ?? '',
    };
  }
  const lastClaim = meta.t === undefined ? 0 : (claimTimeOfToken(meta.t) ?? 0);
  // The due time of the last scheduling is what get() shows as runAt of a job that is not waiting.
  const charged = meta.a > 0 ? withClaim(header, meta, lastClaim, meta.r ?? lastClaim) : header;
  const record = encodeRecord(charged, converted.payload);
  if (job.died !== null) return { ...base, record, target: 'd', score: job.died, error: job.error ?? '' };
  return { ...base, record, target: 's', score: job.due ?? meta.r ?? now, error: job.error ?? '' };
}

/** The header fields layout 1 kept in meta and the envelope. */
function headerOf(meta: LegacyMeta, converted: ConvertedPayload, hasError: boolean): RecordHeader {
  const header: RecordHeader = {
    ...NEW_JOB_HEADER,
    maxAttempts: clamp(meta.m, 1, UINT16_MAX),
    version: converted.version,
    hasError,
  };
  const optional: { -readonly [K in keyof RecordHeader]?: RecordHeader[K] } = {};
  if (meta.b !== undefined) optional.backoff = boundedBackoff(meta.b);
  if (meta.o !== undefined) optional.timeoutMs = clamp(meta.o, 1, UINT32_MAX);
  if (converted.createdAt !== undefined && converted.createdAt > 0) optional.createdAt = converted.createdAt;
  if (converted.traceparent !== undefined) optional.traceparent = converted.traceparent;
  return { ...header, ...optional };
}

/** `header` with a claim block: attempts made as layout 1 counted them, the claim count the same. */
function withClaim(header: RecordHeader, meta: LegacyMeta, claimedAt: number, runDue: number): RecordHeader {
  const attempts = clamp(meta.a, 0, UINT16_MAX);
  // Layout 1's token counter is per queue (it passes 65535 on any busy queue), so the claim count
  // starts from the attempts instead; the claim time keeps the lease member unique.
  return { ...header, attempts, claims: Math.max(attempts, 1), claimedAt, runDue, holder: 0 };
}

/** A backoff whose durations fit the header's uint32 fields (49 days: longer is clamped). */
function boundedBackoff(b: NonNullable<LegacyMeta['b']>): NonNullable<RecordHeader['backoff']> {
  const delay = clamp(b.delay, 0, UINT32_MAX);
  if (b.type === 'fixed')
    return b.jitter === undefined ? { type: 'fixed', delay } : { type: 'fixed', delay, jitter: b.jitter };
  return {
    type: 'exponential',
    delay,
    ...(b.max === undefined ? {} : { max: clamp(b.max, 0, UINT32_MAX - 1) }),
    ...(b.jitter === undefined ? {} : { jitter: b.jitter }),
  };
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, Math.floor(value)));
}

/**
 * `job` buried in layout 2 with `reason`: its stored bytes kept as payload (nothing is thrown away),
 * the attempts it made, and an error saying why, so `delayq show` and dead.list() explain it.
 */
function bury(
  job: LegacyJob,
  base: Pick<Conversion, 'id' | 'meta' | 'lease' | 'member' | 'problem'>,
  bytes: Buffer,
  reason: string,
  now: number,
): Conversion {
  const meta = job.meta === null ? null : parseLegacyMeta(job.meta);
  const attempts = meta === null ? 0 : clamp(meta.a, 0, UINT16_MAX);
  const header: RecordHeader = {
    ...NEW_JOB_HEADER,
    ...(meta === null ? {} : { maxAttempts: clamp(meta.m, 1, UINT16_MAX) }),
    ...(attempts > 0 ? { attempts, claims: attempts } : {}),
    hasError: true,
  };
  const message = `could not be converted to layout 2 by delayq migrate: ${reason}`;
  return {
    ...base,
    member: '',
    problem: message,
    record: encodeRecord(header, bytes),
    target: 'd',
    score: job.died ?? now,
    error: JSON.stringify({ name: 'MigrateError', message, at: now, attempt: attempts }),
  };
}
