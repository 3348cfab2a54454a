/**
 * The record of a new job: its header from the resolved add options, and header and payload in
 * the bytes the add script stores.
 */
import type { ResolvedAddOptions } from '../job-options.js';
import { textRecord, type RecordBytes } from '../operations/add-pack.js';
import { encodeRecord, NEW_JOB_HEADER, type RecordHeader } from '../record/index.js';

/**
 * The record header of a new job with `opts`: the shared default one when nothing differs from it,
 * as for most jobs of a bulk add (no object built per job).
 */
export function newJobHeader(
  opts: ResolvedAddOptions,
  version: number,
  traceparent: string | undefined,
): RecordHeader {
  if (
    opts.attempts === NEW_JOB_HEADER.maxAttempts &&
    opts.backoff === undefined &&
    opts.timeoutMs === undefined &&
    opts.priority === 0 &&
    opts.group === undefined &&
    version === NEW_JOB_HEADER.version &&
    traceparent === undefined
  ) {
    return NEW_JOB_HEADER;
  }
  return {
    ...NEW_JOB_HEADER,
    maxAttempts: opts.attempts,
    ...(opts.backoff && { backoff: opts.backoff }),
    ...(opts.timeoutMs !== undefined && { timeoutMs: opts.timeoutMs }),
    priority: opts.priority,
    ...(opts.group !== undefined && { group: opts.group, groupDue: 0 }),
    version,
    ...(traceparent !== undefined && { traceparent }),
  };
}

let newJobHead: Buffer | undefined;

/**
 * The record of a new job: `header` and `payload` in one Buffer, or, for a payload that is text
 * (the json codec's), the header's bytes and the text (a TextRecord; most share the default
 * header's bytes, encoded once).
 */
export function jobRecord(header: RecordHeader, payload: Buffer | string): RecordBytes {
  if (typeof payload !== 'string') return encodeRecord(header, payload);
  const head =
    header === NEW_JOB_HEADER ? (newJobHead ??= encodeRecord(NEW_JOB_HEADER)) : encodeRecord(header);
  return textRecord(head, payload);
}
