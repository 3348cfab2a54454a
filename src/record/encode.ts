/**
 * Writes a record: header (docs/ARCHITECTURE.md §3.2) then the payload bytes untouched. Fields
 * at their default are left out, so a default job's header is two bytes.
 */
import type { ResolvedBackoff } from '../backoff.js';
import { ValidationError } from '../errors.js';
import {
  CLAIM_BLOCK_BYTES,
  DEFAULT_MAX_ATTEMPTS,
  FLAG_A,
  FLAG_B,
  MAX_PRIORITY,
  MIN_PRIORITY,
  RECORD_FORMAT,
  type RecordHeader,
} from './header.js';

const UINT16_MAX = 0xffff;
const UINT32_MAX = 0xffffffff;
const UINT48_MAX = 2 ** 48 - 1;
/** Backoff `max` value meaning "no cap". */
export const BACKOFF_NO_MAX = UINT32_MAX;
/** Backoff kind byte: 1 fixed, 2 exponential, + 0x80 with jitter. */
export const BACKOFF_KIND = { fixed: 1, exponential: 2, jitter: 0x80 } as const;

function check(ok: boolean, field: string, message: string): void {
  if (!ok) throw new ValidationError(`record header: ${field} ${message}`, field);
}

function whole(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}

/** The bytes of a header plus `payload` (or, for a completed record with a result, the result). */
export function encodeRecord(header: RecordHeader, payload: Uint8Array = new Uint8Array(0)): Buffer {
  const claimed = header.claims > 0;
  const group = header.group === undefined ? undefined : Buffer.from(header.group, 'utf8');
  const trace = header.traceparent === undefined ? undefined : Buffer.from(header.traceparent, 'latin1');
  let a = 0;
  let b = 0;
  let size = 2;
  if (claimed) {
    check(whole(header.attempts, 0, UINT16_MAX), 'attempts', 'must be a whole number 0..65535');
    check(whole(header.claims, 1, UINT16_MAX), 'claims', 'must be a whole number 1..65535');
    check(whole(header.claimedAt, 0, UINT48_MAX), 'claimedAt', 'must be epoch ms (uint48)');
    check(whole(header.runDue, 0, UINT48_MAX), 'runDue', 'must be epoch ms (uint48)');
    check(whole(header.holder, 0, UINT32_MAX), 'holder', 'must be a whole number (uint32)');
    a |= FLAG_A.claim;
    size += CLAIM_BLOCK_BYTES;
  } else {
    check(
      header.attempts === 0 && header.claimedAt === 0 && header.runDue === 0 && header.holder === 0,
      'claims',
      'is 0 (never claimed), so attempts, claimedAt, runDue and holder must be 0 too',
    );
  }
  if (header.maxAttempts !== DEFAULT_MAX_ATTEMPTS) {
    check(whole(header.maxAttempts, 1, UINT16_MAX), 'maxAttempts', 'must be a whole number 1..65535');
    a |= FLAG_A.maxAttempts;
    size += 2;
  }
  if (header.backoff !== undefined) {
    const { delay } = header.backoff;
    const max = header.backoff.type === 'exponential' ? header.backoff.max : undefined;
    check(whole(delay, 0, UINT32_MAX - 1), 'backoff.delay', 'must be whole ms below 2^32 - 1');
    check(
      max === undefined || whole(max, 0, UINT32_MAX - 1),
      'backoff.max',
      'must be whole ms below 2^32 - 1',
    );
    a |= FLAG_A.backoff;
    size += 9;
  }
  if (header.priority !== 0) {
    check(
      whole(header.priority, MIN_PRIORITY, MAX_PRIORITY),
      'priority',
      `must be a whole number ${MIN_PRIORITY}..${MAX_PRIORITY}`,
    );
    a |= FLAG_A.priority;
    size += 2;
  }
  if (group !== undefined) {
    check(group.length >= 1 && group.length <= 255, 'group', 'must be 1..255 bytes of UTF-8');
    // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
    check(!/[\u0000-\u001f\u007f]/.test(header.group ?? ''), 'group', 'may not contain control characters');
    check(whole(header.groupDue ?? 0, 0, UINT48_MAX), 'groupDue', 'must be epoch ms (uint48)');
    a |= FLAG_A.group;
    size += 1 + group.length + 6;
  }
  if (header.timeoutMs !== undefined) {
    check(whole(header.timeoutMs, 1, UINT32_MAX), 'timeoutMs', 'must be whole ms 1..2^32 - 1');
    a |= FLAG_A.timeout;
    size += 4;
  }
  if (header.createdAt !== undefined) {
    check(whole(header.createdAt, 0, UINT48_MAX), 'createdAt', 'must be epoch ms (uint48)');
    a |= FLAG_A.createdAt;
    size += 6;
  }
  if (header.version !== 1) {
    check(whole(header.version, 2, UINT16_MAX), 'version', 'must be a whole number 1..65535');
    b |= FLAG_B.version;
    size += 2;
  }
  if (trace !== undefined) {
    check(trace.length >= 1 && trace.length <= 255, 'traceparent', 'must be 1..255 bytes');
    b |= FLAG_B.traceparent;
    size += 1 + trace.length;
  }
  if (header.hasError) b |= FLAG_B.hasError;
  if (header.completed) b |= FLAG_B.completed;
  if (header.cancelled) b |= FLAG_B.cancelled;
  if (header.flow === true) b |= FLAG_B.flow;
  if (header.hasResult) {
    check(header.completed, 'hasResult', 'is only allowed on a completed record');
    b |= FLAG_B.hasResult;
  }
  if (b !== 0) {
    a |= FLAG_A.more;
    size += 1;
  }

  const out = Buffer.allocUnsafe(size + payload.length);
  let at = out.writeUInt8(RECORD_FORMAT, 0);
  at = out.writeUInt8(a, at);
  if (b !== 0) at = out.writeUInt8(b, at);
  if (claimed) {
    at = out.writeUInt16BE(header.attempts, at);
    at = out.writeUInt16BE(header.claims, at);
    at = out.writeUIntBE(header.claimedAt, at, 6);
    at = out.writeUIntBE(header.runDue, at, 6);
    at = out.writeUInt32BE(header.holder, at);
  }
  if (a & FLAG_A.maxAttempts) at = out.writeUInt16BE(header.maxAttempts, at);
  if (header.backoff !== undefined) at = writeBackoff(out, at, header.backoff);
  if (a & FLAG_A.priority) at = out.writeInt16BE(header.priority, at);
  if (group !== undefined) {
    at = out.writeUInt8(group.length, at);
    at += group.copy(out, at);
    at = out.writeUIntBE(header.groupDue ?? 0, at, 6);
  }
  if (header.timeoutMs !== undefined) at = out.writeUInt32BE(header.timeoutMs, at);
  if (header.createdAt !== undefined) at = out.writeUIntBE(header.createdAt, at, 6);
  if (b & FLAG_B.version) at = out.writeUInt16BE(header.version, at);
  if (trace !== undefined) {
    at = out.writeUInt8(trace.length, at);
    at += trace.copy(out, at);
  }
  out.set(payload, at);
  return out;
}

function writeBackoff(out: Buffer, at: number, backoff: ResolvedBackoff): number {
  let kind: number = backoff.type === 'fixed' ? BACKOFF_KIND.fixed : BACKOFF_KIND.exponential;
  if (backoff.jitter === true) kind |= BACKOFF_KIND.jitter;
  const max = backoff.type === 'exponential' ? backoff.max : undefined;
  let next = out.writeUInt8(kind, at);
  next = out.writeUInt32BE(backoff.delay, next);
  return out.writeUInt32BE(max ?? BACKOFF_NO_MAX, next);
}
