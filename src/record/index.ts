// The layout-2 job record: header encode/decode (docs/ARCHITECTURE.md §3.2).
export * from './header.js';
export { encodeRecord } from './encode.js';
export { decodeRecord, type DecodedRecord } from './decode.js';
export { RecordFormatError } from './record-format-error.js';
export {
  COMPLETED_RECORD,
  CANCELLED_RECORD,
  completedRecordWithResult,
  finalRecord,
  finalRecordLength,
  writeFinalRecord,
  type FinalHeader,
} from './final.js';
