/**
 * The final records a job keeps in `j` after it ends (docs/ARCHITECTURE.md §3.2): three bytes
 * of header, plus the result when results are kept.
 */

/** A completed record without a result: format 1, flags A 0x80 (B follows), B 0x08 (D). */
export const COMPLETED_RECORD: Buffer = Buffer.from([0x01, 0x80, 0x08]);

/** A cancelled record: B 0x10 (Q). */
export const CANCELLED_RECORD: Buffer = Buffer.from([0x01, 0x80, 0x10]);

/** A completed record holding `result` (the codec's bytes of the handler's return value): D|U. */
export function completedRecordWithResult(result: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([0x01, 0x80, 0x28]), result]);
}
