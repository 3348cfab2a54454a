/** A stored job as the Queue API shows it: its record decoded with the queue's codec, times as Dates. */
import type { Codec } from '../codec/codec.js';
import type { RecordedError } from '../operations/fail.js';
import { parseLogLines, type JobLogLine } from '../operations/log.js';
import type { JobInfoState, RawJob } from '../operations/raw-job.js';
import { decodeRecord, type RecordHeader } from '../record/index.js';

/**
 * Everything known about a job. `R` is the type of its handler's result (`queue.get<R>(id)`): the
 * codec's decoding is not checked against it, as with the payload's `T` without a schema.
 */
export interface JobInfo<T, R = unknown> {
  id: string;
  state: JobInfoState;
  /**
   * The payload; undefined for a completed or cancelled job (only a small final record is kept) and
   * when the stored bytes could not be decoded (see decodeError).
   */
  payload: T | undefined;
  decodeError?: string;
  /** Payload schema version the job was written with. */
  version?: number;
  /**
   * Due time of the current scheduling (scheduled), or of the running or last attempt (active,
   * completed, dead, and cancelled after a run). For a job cancelled before it ever ran, and for
   * one completed by a worker of delayq 0.2 (whose final record kept no due time): when it ended.
   */
  runAt: Date;
  /**
   * Attempts started so far, and for a finished job the attempts it used (a released or snoozed
   * run does not count). 0 for a job completed by a worker of delayq 0.2.
   */
  attempts: number;
  maxAttempts: number;
  /** -1024..1023, lower runs first among due jobs; 0 the default. */
  priority: number;
  /** The job's group (`add(payload, { group })`), when it has one. */
  group?: string;
  /** Producer clock at add, when the queue records it (Queue option `recordCreatedAt`). */
  createdAt?: Date;
  lastError: RecordedError | null;
  /** For an active job: who holds it, since when and until when (server clock). */
  lease: { workerId: string; startedAt: Date; deadline: Date } | null;
  /** For a completed, dead or cancelled job: when it ended (completedAt, diedAt or cancelledAt). */
  finishedAt?: Date;
  /** For a dead job: when it died. */
  diedAt?: Date;
  /** For a completed job (kept for a while, bounded by count and age): when. */
  completedAt?: Date;
  /**
   * For a completed job whose worker keeps completed jobs (its `keepCompleted` option): the
   * handler's return value, decoded with the queue's codec.
   */
  result?: R;
  /** For a cancelled job (kept for a while, bounded by count and age): when. Its payload is not kept. */
  cancelledAt?: Date;
  /** For an active job: the last value its handler gave `job.progress()`, when it gave one. */
  progress?: unknown;
  /**
   * The lines its handlers gave `job.log()`, oldest first, kept while the job is (also once it
   * completed, died or was cancelled). Given by `get()` (an empty array when there are none);
   * left out of pages of jobs (`list()`, `search()`), which do not read them.
   */
  logs?: JobLogLine[];
  /** A flow's child (queue.addFlow): its parent's id, while the flow's parent has not ended. */
  parent?: string;
  /** A flow's child whose parent is in another queue (one Redis only): that queue's name. */
  parentQueue?: string;
  /**
   * A flow's parent: its children and their states ('unknown' for one no longer kept), while it
   * has not ended; state 'waiting-children' while some have not completed.
   */
  children?: Array<{ id: string; state: JobInfoState | 'unknown'; queue?: string }>;
}

/**
 * `raw` decoded with `codec`; a record or payload that does not decode is reported in decodeError,
 * not thrown. `logs`: the job's packed log lines as stored (get()); undefined leaves `logs` out.
 */
export function toInfo<T, R = unknown>(codec: Codec, raw: RawJob, logs?: Buffer | null): JobInfo<T, R> {
  let header: RecordHeader | undefined;
  let body: Buffer | undefined;
  let decodeError: string | undefined;
  try {
    const decoded = decodeRecord(raw.record);
    header = decoded.header;
    body = decoded.payload;
  } catch (err) {
    decodeError = err instanceof Error ? err.message : String(err);
  }
  const info: JobInfo<T, R> = {
    id: raw.id,
    state: raw.state,
    payload: undefined,
    runAt: new Date(runAtOf(raw, header)),
    attempts: header?.attempts ?? 0,
    maxAttempts: header?.maxAttempts ?? 0,
    priority: header?.priority ?? 0,
    ...(header?.group !== undefined && { group: header.group }),
    lastError: raw.lastError,
    lease:
      raw.state === 'active' && header
        ? {
            workerId: raw.holder?.workerId ?? '?',
            startedAt: new Date(header.claimedAt),
            deadline: new Date(raw.score),
          }
        : null,
  };
  if (header && body && !header.completed && !header.cancelled) {
    try {
      info.payload = codec.decodePayload(body) as T;
    } catch (err) {
      decodeError = err instanceof Error ? err.message : String(err);
    }
  }
  if (header?.completed && header.hasResult && body) {
    try {
      info.result = codec.decodePayload(body) as R;
    } catch (err) {
      decodeError = `result: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  if (decodeError !== undefined) info.decodeError = decodeError;
  if (header && !header.completed && !header.cancelled) info.version = header.version;
  if (header?.createdAt !== undefined) info.createdAt = new Date(header.createdAt);
  if (raw.state === 'dead') info.diedAt = new Date(raw.score);
  if (raw.state === 'completed') info.completedAt = new Date(raw.score);
  if (raw.state === 'cancelled') info.cancelledAt = new Date(raw.score);
  if (raw.state === 'dead' || raw.state === 'completed' || raw.state === 'cancelled') {
    info.finishedAt = new Date(raw.score);
  }
  if (raw.progress !== null) info.progress = parseProgress(raw.progress);
  if (logs !== undefined) {
    // A final record without a claim block (acked by a worker of delayq 0.2, or with the bare
    // result form) does not say which runs the job had: its lines are shown as they are.
    const run =
      header !== undefined && (header.claims > 0 || !(header.completed || header.cancelled))
        ? { claims: header.claims, claimedAt: header.claimedAt }
        : null;
    info.logs = parseLogLines(logs, run);
  }
  return info;
}

function runAtOf(raw: RawJob, header: RecordHeader | undefined): number {
  if (raw.state === 'scheduled' || raw.state === 'waiting-children') return raw.score;
  // A final record keeps the claim block (finalRecord): the due time of the last run, if any.
  return header?.runDue || raw.score;
}

/** A stored progress value; text that is not JSON (written by hand) is shown as it is. */
function parseProgress(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return json;
  }
}
