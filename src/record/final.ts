/**
 * The final records a job keeps in `j` after it ends (docs/ARCHITECTURE.md §3.2, docs/PROTOCOL.md
 * "The record"): the header of a completed or cancelled job keeps its claim block and max
 * attempts (so `get()` shows the attempts it used, its max attempts and the due time of its last
 * run), plus the result when results are kept. Nothing else of the job is kept.
 */
import {
  CLAIM_BLOCK_BYTES,
  DEFAULT_MAX_ATTEMPTS,
  FLAG_A,
  FLAG_B,
  RECORD_FORMAT,
  type RecordHeader,
} from './header.js';

/** A completed record of a job never claimed (or written by delayq 0.2): `01 80 08`. */
export const COMPLETED_RECORD: Buffer = Buffer.from([0x01, 0x80, 0x08]);

/** A cancelled record of a job never claimed, of default max attempts: `01 80 10`. */
export const CANCELLED_RECORD: Buffer = Buffer.from([0x01, 0x80, 0x10]);

/** A completed record holding `result`, without claim block: D|U (what delayq 0.2 wrote). */
export function completedRecordWithResult(result: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([0x01, 0x80, 0x28]), result]);
}

/** What a final record keeps of a job's header. */
export type FinalHeader = Pick<
  RecordHeader,
  'attempts' | 'claims' | 'claimedAt' | 'runDue' | 'holder' | 'maxAttempts'
>;

/**
 * The final record of a job whose header is `header`: completed (with `result`, the codec's bytes
 * of the handler's return value, when given) or cancelled. Written for every ack, so it is built
 * directly rather than through encodeRecord's checks: its fields come from a decoded header.
 */
export function finalRecord(
  header: FinalHeader,
  kind: 'completed' | 'cancelled',
  result?: Uint8Array,
): Buffer {
  const out = Buffer.allocUnsafe(finalRecordLength(header, kind, result));
  writeFinalRecord(out, 0, header, kind, result);
  return out;
}

/** The bytes of finalRecord(header, kind, result). */
export function finalRecordLength(
  header: FinalHeader,
  kind: 'completed' | 'cancelled',
  result?: Uint8Array,
): number {
  return (
    3 +
    (header.claims > 0 ? CLAIM_BLOCK_BYTES : 0) +
    (header.maxAttempts !== DEFAULT_MAX_ATTEMPTS ? 2 : 0) +
    (kind === 'completed' && result ? result.length : 0)
  );
}

/**
 * Write finalRecord(header, kind, result) into `out` at `at` (finalRecordLength bytes); returns the
 * offset after it. A claim's acks are written this way, straight into the command (ack-args.ts).
 */
export function writeFinalRecord(
  out: Buffer,
  at: number,
  header: FinalHeader,
  kind: 'completed' | 'cancelled',
  result?: Uint8Array,
): number {
  const claimed = header.claims > 0;
  const max = header.maxAttempts !== DEFAULT_MAX_ATTEMPTS;
  out[at] = RECORD_FORMAT;
  out[at + 1] = FLAG_A.more | (claimed ? FLAG_A.claim : 0) | (max ? FLAG_A.maxAttempts : 0);
  out[at + 2] =
    kind === 'cancelled'
      ? FLAG_B.cancelled
      : FLAG_B.completed | (result !== undefined ? FLAG_B.hasResult : 0);
  at += 3;
  if (claimed) {
    at = out.writeUInt16BE(header.attempts, at);
    at = out.writeUInt16BE(header.claims, at);
    at = out.writeUIntBE(header.claimedAt, at, 6);
    at = out.writeUIntBE(header.runDue, at, 6);
    at = out.writeUInt32BE(header.holder, at);
  }
  if (max) at = out.writeUInt16BE(header.maxAttempts, at);
  if (kind === 'completed' && result) {
    out.set(result, at);
    at += result.length;
  }
  return at;
}
