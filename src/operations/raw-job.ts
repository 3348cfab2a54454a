/**
 * A job as the read scripts (get.lua, list.lua, group-jobs.lua) return it, not yet decoded
 * (src/queue/info.ts decodes it): its state, stored record, score, last error, holder and progress.
 */
import type { Reply } from '../redis/scripts.js';
import type { RecordedError } from './fail.js';
import { bytes, num, optionalStr } from './reply.js';

/** A job's state as delayq stores it ('scheduled' is what the scripts call waiting). */
export type JobState = 'scheduled' | 'active' | 'dead' | 'completed' | 'cancelled';

/**
 * A job's state as get() shows it: a JobState, or 'waiting-children' for a flow's parent whose
 * children have not all completed (queue.addFlow; it is in no list or count of the other states).
 */
export type JobInfoState = JobState | 'waiting-children';

/**
 * Every state a job can be seen in, in the order a job goes through them (a flow's parent waits
 * for its children first): the order search walks them and the CLI offers them.
 */
export const JOB_INFO_STATES: readonly JobInfoState[] = [
  'waiting-children',
  'scheduled',
  'active',
  'dead',
  'completed',
  'cancelled',
];

/** Who holds (active) or last held a job: the worker registry entry of its record's holder number. */
export interface Holder {
  workerId: string;
  /** When that worker started (its registration), epoch ms. */
  workerStartedAt: number;
}

/** Everything stored about one job, not yet decoded. */
export interface RawJob {
  id: string;
  state: JobInfoState;
  /** The record as stored: header + payload; for a completed job header + result (when kept). */
  record: Buffer;
  /** Due time (scheduled), lease deadline (active), died at (dead), completed at or cancelled at. */
  score: number;
  /** The lease member "<claims>.<claimedAt>|<id>" of an active job, else null. */
  member: string | null;
  holder: Holder | null;
  lastError: RecordedError | null;
  /** The running attempt's last progress value (JSON text), or null when it reported none. */
  progress: string | null;
  /** get() only: a flow child's parent id, while the flow is live (flow.lua). */
  parent?: string;
  /** get() only: a flow child's parent's queue, when it is not the child's own. */
  parentQueue?: string;
  /** get() only: a flow parent's children, while it has not ended (queue: when not the parent's). */
  children?: Array<{ id: string; queue?: string }>;
}

/** Parse a worker registry entry "<worker id>|<started ms>" (the worker id may contain '|'). */
export function parseHolder(raw: string | null): Holder | null {
  if (raw === null) return null;
  const bar = raw.lastIndexOf('|');
  if (bar < 0) return { workerId: raw, workerStartedAt: 0 };
  return { workerId: raw.slice(0, bar), workerStartedAt: Number(raw.slice(bar + 1)) };
}

function parseError(raw: string | null): RecordedError | null {
  if (raw === null) return null;
  try {
    return JSON.parse(raw) as RecordedError;
  } catch {
    return { name: 'Error', message: raw };
  }
}

function stateOf(scriptState: string): JobInfoState {
  return scriptState === 'waiting' ? 'scheduled' : (scriptState as JobInfoState);
}

/** One job from a reply (get.lua, list.lua, group-jobs.lua): record, score, error, holder, progress, member from `at`. */
export function rawJob(id: string, state: string, reply: Reply[], at: number, name: string): RawJob {
  return {
    id,
    state: stateOf(state),
    record: bytes(reply, at, name),
    score: num(reply, at + 1, name),
    lastError: parseError(optionalStr(reply, at + 2)),
    holder: parseHolder(optionalStr(reply, at + 3)),
    progress: optionalStr(reply, at + 4),
    member: optionalStr(reply, at + 5),
  };
}
