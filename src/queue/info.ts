/** A stored job as the Queue API shows it: decoded with the queue's codec, times as Dates. */
import type { Codec } from '../codec/codec.js';
import { decodeEnvelope } from '../codec/envelope.js';
import type { RecordedError } from '../operations/fail.js';
import type { JobState, RawJob } from '../operations/inspect.js';

/** Everything known about a job. */
export interface JobInfo<T> {
  id: string;
  state: JobState;
  /** The payload; undefined only when the stored bytes could not be decoded (see decodeError). */
  payload: T | undefined;
  decodeError?: string;
  /** Payload schema version the job was written with. */
  version?: number;
  /** Due time of the current or last scheduling. */
  runAt: Date;
  /** Attempts started so far. */
  attempts: number;
  maxAttempts: number;
  createdAt?: Date;
  lastError: RecordedError | null;
  /** For an active job: who holds it and until when (server clock). */
  lease: { workerId: string; startedAt: Date; deadline: Date } | null;
  /** For a dead job: when it died. */
  diedAt?: Date;
  /** For a cancelled job (kept for a while, bounded by count and age): when. Its payload is not kept. */
  cancelledAt?: Date;
  /** For an active job: the last value its handler gave `job.progress()`, when it gave one. */
  progress?: unknown;
}

/** `raw` decoded with `codec`; a payload that does not decode is reported in decodeError, not thrown. */
export function toInfo<T>(codec: Codec, raw: RawJob): JobInfo<T> {
  if (raw.state === 'cancelled') return cancelledInfo(raw);
  let payload: T | undefined;
  let decodeError: string | undefined;
  let version: number | undefined;
  let createdAt: Date | undefined;
  try {
    const envelope = decodeEnvelope(codec, raw.envelope, raw.id);
    payload = envelope.payload as T;
    version = envelope.version;
    createdAt = new Date(envelope.createdAt);
  } catch (err) {
    decodeError = err instanceof Error ? err.message : String(err);
  }
  const info: JobInfo<T> = {
    id: raw.id,
    state: raw.state,
    payload,
    runAt: new Date(raw.state === 'scheduled' ? raw.score : (raw.meta.r ?? raw.score)),
    attempts: raw.meta.a,
    maxAttempts: raw.meta.m,
    lastError: raw.lastError,
    lease:
      raw.state === 'active' && raw.lease
        ? {
            workerId: raw.lease.workerId,
            startedAt: new Date(raw.lease.startedAt),
            deadline: new Date(raw.score),
          }
        : null,
  };
  if (decodeError !== undefined) info.decodeError = decodeError;
  if (version !== undefined) info.version = version;
  if (createdAt !== undefined) info.createdAt = createdAt;
  if (raw.state === 'dead') info.diedAt = new Date(raw.score);
  if (raw.progress !== null) info.progress = parseProgress(raw.progress);
  return info;
}

/** A cancelled job: only its id and when are kept, so there is no payload to decode. */
function cancelledInfo<T>(raw: RawJob): JobInfo<T> {
  return {
    id: raw.id,
    state: 'cancelled',
    payload: undefined,
    runAt: new Date(raw.score),
    attempts: 0,
    maxAttempts: 0,
    lastError: null,
    lease: null,
    cancelledAt: new Date(raw.score),
  };
}

/** A stored progress value; text that is not JSON (written by hand) is shown as it is. */
function parseProgress(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return json;
  }
}
