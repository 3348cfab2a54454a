/** Reads the committed record vectors (headers.json), for the TypeScript and the Lua tests. */
import { readFileSync } from 'node:fs';
import { NEW_JOB_HEADER, type RecordHeader } from '../../../src/record/index.js';

/** One vector: the header fields that differ from a new job's, the bytes after it, the record. */
export interface RecordVector {
  name: string;
  description: string;
  header: Partial<RecordHeader>;
  payloadHex: string;
  hex: string;
}

/** The vectors of headers.json, each with its full header. */
export function loadRecordVectors(): Array<RecordVector & { full: RecordHeader }> {
  const file = JSON.parse(readFileSync(new URL('./headers.json', import.meta.url), 'utf8')) as {
    vectors: RecordVector[];
  };
  return file.vectors.map((v) => ({ ...v, full: { ...NEW_JOB_HEADER, ...v.header } }));
}
