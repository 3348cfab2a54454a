/**
 * Reads a record: its header (docs/ARCHITECTURE.md §3.2) and, without copying, the bytes after
 * it. Strict: an unknown format byte, a reserved flag bit or a truncated header is refused with a
 * RecordFormatError, never guessed at.
 */
import type { ResolvedBackoff } from '../backoff.js';
import { BACKOFF_KIND, BACKOFF_NO_MAX } from './encode.js';
import {
  CLAIM_BLOCK_BYTES,
  DEFAULT_MAX_ATTEMPTS,
  FLAG_A,
  FLAG_B,
  RECORD_FORMAT,
  type RecordHeader,
} from './header.js';
import { RecordFormatError } from './record-format-error.js';

/** A decoded record. */
export interface DecodedRecord {
  readonly header: RecordHeader;
  /** The payload (or a completed record's result): a view into the record's buffer, not a copy. */
  readonly payload: Buffer;
  /** Bytes of header before the payload. */
  readonly headerLength: number;
}

/** Decode `record`; throws RecordFormatError when it cannot be read. */
export function decodeRecord(record: Buffer): DecodedRecord {
  need(record, 0, 2, 'the format and flags bytes');
  const format = record.readUInt8(0);
  if (format !== RECORD_FORMAT) {
    throw new RecordFormatError(
      `record format byte is 0x${format.toString(16).padStart(2, '0')}; this version of delayq reads format 0x01 only`,
    );
  }
  const a = record.readUInt8(1);
  let at = 2;
  let b = 0;
  if (a & FLAG_A.more) {
    need(record, at, 1, 'flags B');
    b = record.readUInt8(at);
    at += 1;
    if (b & FLAG_B.reserved) {
      throw new RecordFormatError(
        `record flags B 0x${b.toString(16).padStart(2, '0')} has reserved bits set (a newer record format?)`,
      );
    }
  }
  let attempts = 0;
  let claims = 0;
  let claimedAt = 0;
  let runDue = 0;
  let holder = 0;
  if (a & FLAG_A.claim) {
    need(record, at, CLAIM_BLOCK_BYTES, 'the claim block');
    attempts = record.readUInt16BE(at);
    claims = record.readUInt16BE(at + 2);
    claimedAt = record.readUIntBE(at + 4, 6);
    runDue = record.readUIntBE(at + 10, 6);
    holder = record.readUInt32BE(at + 16);
    at += CLAIM_BLOCK_BYTES;
  }
  let maxAttempts = DEFAULT_MAX_ATTEMPTS;
  if (a & FLAG_A.maxAttempts) {
    need(record, at, 2, 'max attempts');
    maxAttempts = record.readUInt16BE(at);
    at += 2;
    if (maxAttempts === 0) throw new RecordFormatError('record max attempts is 0; it must be 1..65535');
  }
  let backoff: ResolvedBackoff | undefined;
  if (a & FLAG_A.backoff) {
    need(record, at, 9, 'the backoff');
    backoff = readBackoff(record, at);
    at += 9;
  }
  let priority = 0;
  if (a & FLAG_A.priority) {
    need(record, at, 2, 'the priority');
    priority = record.readInt16BE(at);
    at += 2;
  }
  let group: string | undefined;
  let groupDue: number | undefined;
  if (a & FLAG_A.group) {
    need(record, at, 1, 'the group length');
    const length = record.readUInt8(at);
    if (length === 0) throw new RecordFormatError('record group length is 0; a group is 1..255 bytes');
    need(record, at + 1, length + 6, 'the group');
    group = record.toString('utf8', at + 1, at + 1 + length);
    groupDue = record.readUIntBE(at + 1 + length, 6);
    at += 1 + length + 6;
  }
  let timeoutMs: number | undefined;
  if (a & FLAG_A.timeout) {
    need(record, at, 4, 'the timeout');
    timeoutMs = record.readUInt32BE(at);
    at += 4;
  }
  let createdAt: number | undefined;
  if (a & FLAG_A.createdAt) {
    need(record, at, 6, 'the created-at time');
    createdAt = record.readUIntBE(at, 6);
    at += 6;
  }
  let version = 1;
  if (b & FLAG_B.version) {
    need(record, at, 2, 'the version');
    version = record.readUInt16BE(at);
    at += 2;
  }
  let traceparent: string | undefined;
  if (b & FLAG_B.traceparent) {
    need(record, at, 1, 'the traceparent length');
    const length = record.readUInt8(at);
    need(record, at + 1, length, 'the traceparent');
    traceparent = record.toString('latin1', at + 1, at + 1 + length);
    at += 1 + length;
  }
  const hasError = (b & FLAG_B.hasError) !== 0;
  const completed = (b & FLAG_B.completed) !== 0;
  const cancelled = (b & FLAG_B.cancelled) !== 0;
  const hasResult = (b & FLAG_B.hasResult) !== 0;
  const flow = (b & FLAG_B.flow) !== 0;
  if (
    !flow &&
    backoff === undefined &&
    group === undefined &&
    timeoutMs === undefined &&
    createdAt === undefined &&
    traceparent === undefined
  ) {
    // No optional field (most jobs): one literal, its keys in the same order as below. Grown field
    // by field, the object reallocated its out-of-object property store twice per claimed job.
    const plain: RecordHeader = {
      attempts,
      claims,
      claimedAt,
      runDue,
      holder,
      maxAttempts,
      priority,
      version,
      hasError,
      completed,
      cancelled,
      hasResult,
    };
    return { header: plain, payload: record.subarray(at), headerLength: at };
  }
  // Assigned one by one in the order of the header's fields, the optional ones only when present:
  // a literal with conditional spreads made a throw-away object per absent field, per claimed job.
  const header: Mutable<RecordHeader> = { attempts, claims, claimedAt, runDue, holder, maxAttempts };
  if (backoff !== undefined) header.backoff = backoff;
  header.priority = priority;
  if (group !== undefined) {
    header.group = group;
    header.groupDue = groupDue ?? 0;
  }
  if (timeoutMs !== undefined) header.timeoutMs = timeoutMs;
  if (createdAt !== undefined) header.createdAt = createdAt;
  header.version = version;
  if (traceparent !== undefined) header.traceparent = traceparent;
  header.hasError = hasError;
  header.completed = completed;
  header.cancelled = cancelled;
  header.hasResult = hasResult;
  if (flow) header.flow = true;
  return { header: header as RecordHeader, payload: record.subarray(at), headerLength: at };
}

/** A header being filled in: the required fields not yet assigned are optional here too. */
type Mutable<T> = { -readonly [K in keyof T]?: T[K] };

/** Refuse a record too short for the `bytes` of `field` its flags announce at `at`. */
function need(record: Buffer, at: number, bytes: number, field: string): void {
  if (at + bytes > record.length) {
    throw new RecordFormatError(
      `record is truncated: its flags announce ${field} at byte ${at} (${bytes} bytes) but it has ${record.length} bytes`,
    );
  }
}

function readBackoff(record: Buffer, at: number): ResolvedBackoff {
  const kind = record.readUInt8(at);
  const delay = record.readUInt32BE(at + 1);
  const max = record.readUInt32BE(at + 5);
  const jitter = (kind & BACKOFF_KIND.jitter) !== 0;
  const type = kind & ~BACKOFF_KIND.jitter;
  if (type === BACKOFF_KIND.fixed) return { type: 'fixed', delay, ...(jitter ? { jitter } : {}) };
  if (type === BACKOFF_KIND.exponential) {
    return {
      type: 'exponential',
      delay,
      ...(max === BACKOFF_NO_MAX ? {} : { max }),
      ...(jitter ? { jitter } : {}),
    };
  }
  throw new RecordFormatError(
    `record backoff kind ${kind} is unknown (1 fixed, 2 exponential, +0x80 jitter)`,
  );
}
