/**
 * The header of a layout-2 job record (docs/ARCHITECTURE.md §3.2): what delayq knows about a job
 * besides its payload, stored in front of the payload bytes in the record hash `j`.
 */
import type { ResolvedBackoff } from '../backoff.js';

/** The only record format this code reads and writes (the record's first byte). */
export const RECORD_FORMAT = 1;

/** Max attempts when the record has no M field: the format's default, not a setting. */
export const DEFAULT_MAX_ATTEMPTS = 3;

/** Lowest and highest priority a job may have; lower runs first among due jobs, 0 is the default. */
export const MIN_PRIORITY = -1024;
export const MAX_PRIORITY = 1023;

/** Bits of flags byte A: which optional fields follow, in this order. */
export const FLAG_A = {
  claim: 0x01,
  maxAttempts: 0x02,
  backoff: 0x04,
  priority: 0x08,
  group: 0x10,
  timeout: 0x20,
  createdAt: 0x40,
  /** A second flags byte (B) follows A. */
  more: 0x80,
} as const;

/** Bits of flags byte B. 0x80 is reserved: a reader refuses a record with it set. */
export const FLAG_B = {
  version: 0x01,
  traceparent: 0x02,
  hasError: 0x04,
  completed: 0x08,
  cancelled: 0x10,
  hasResult: 0x20,
  /** A job of a flow (a parent, a child, or both): its ack tells the flow (flag 'w'). */
  flow: 0x40,
  reserved: 0x80,
} as const;

/** Sizes in bytes of the fixed-size fields. */
export const CLAIM_BLOCK_BYTES = 20;

/** A record header, decoded. Absent optional fields mean the format's defaults. */
export interface RecordHeader {
  /** Attempts made (charged); a release hands one back. 0 before the first claim. */
  readonly attempts: number;
  /** Claims so far, never decreased: with claimedAt it makes the lease token unique. 0: never claimed. */
  readonly claims: number;
  /** When the last claim happened (server ms); 0 before the first claim. */
  readonly claimedAt: number;
  /** The due time of the run the last claim took (server ms); 0 before the first claim. */
  readonly runDue: number;
  /** The holder number (worker registry `wk`) of the last claim; 0 before the first claim. */
  readonly holder: number;
  /** Attempts allowed, 1..65535. */
  readonly maxAttempts: number;
  /** The job's own backoff; absent: the worker's. */
  readonly backoff?: ResolvedBackoff;
  /** -1024..1023, 0 the default. */
  readonly priority: number;
  /** The job's group (issue 16), and the due time of its current scheduling. */
  readonly group?: string;
  readonly groupDue?: number;
  /** ms one attempt may run; absent: the worker's. */
  readonly timeoutMs?: number;
  /** Producer clock ms at add, only with the Queue option `recordCreatedAt`. */
  readonly createdAt?: number;
  /** Payload schema version, 1..65535. */
  readonly version: number;
  /** W3C traceparent of the add, when tracing is on. */
  readonly traceparent?: string;
  /** A last error is stored in `e`. */
  readonly hasError: boolean;
  /** A completed record: what follows is the result (hasResult) or nothing. */
  readonly completed: boolean;
  /** A cancelled record: nothing follows. */
  readonly cancelled: boolean;
  /** With completed: the bytes after the header are the handler's result, encoded by the codec. */
  readonly hasResult: boolean;
  /**
   * The job belongs to a flow (queue.addFlow): a parent, a child or both. Its ack tells its
   * parent, and a parent's handler can read its children's results. Absent: not a flow's job.
   */
  readonly flow?: true;
}

/** The header of a job nobody has claimed yet, with every field at its default. */
export const NEW_JOB_HEADER: RecordHeader = {
  attempts: 0,
  claims: 0,
  claimedAt: 0,
  runDue: 0,
  holder: 0,
  maxAttempts: DEFAULT_MAX_ATTEMPTS,
  priority: 0,
  version: 1,
  hasError: false,
  completed: false,
  cancelled: false,
  hasResult: false,
};

/** The lease token of a claimed header: "<claims>.<claimedAt>". */
export function recordToken(header: Pick<RecordHeader, 'claims' | 'claimedAt'>): string {
  return `${header.claims}.${header.claimedAt}`;
}
