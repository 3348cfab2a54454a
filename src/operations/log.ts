/**
 * The `log` operation (log.lua): add a line to a running job's log, fenced by its lease; and the
 * read of a job's lines for get() (one HGET of `lg`), decoded from their packed form.
 */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { LOG_MAX_LINE_BYTES, LOG_MAX_LINES_PER_ATTEMPT, LOG_MAX_LINES_PER_JOB } from '../log-line.js';

/** One line of a job's log, as get() shows it. */
export interface JobLogLine {
  /** The attempt that wrote it (job.attempt). */
  attempt: number;
  /** When it was written, by the Redis clock. */
  at: Date;
  line: string;
}

/** What a log write needs. */
export interface LogInput {
  /** The lease member the claim returned: the fence, and (its token) the run the line belongs to. */
  member: string;
  /** The attempt number the handler sees. */
  attempt: number;
  /** The line, already checked (src/log-line.ts). */
  line: string;
}

/**
 * Add a line to the log of the job `member` holds; resolves to the lines this run now has.
 * Throws ScriptLeaseLost when it holds no valid lease, ScriptLogFull when the run has its lines.
 */
export async function writeLog(client: RedisClient, keys: QueueKeys, input: LogInput): Promise<number> {
  const reply = await runScript(
    client,
    script('log'),
    [keys.leases, keys.logs, keys.cancelled],
    [
      input.member,
      input.attempt,
      input.line,
      LOG_MAX_LINE_BYTES,
      LOG_MAX_LINES_PER_ATTEMPT,
      LOG_MAX_LINES_PER_JOB,
    ],
  );
  return Number(reply);
}

/** Job `id`'s packed log lines as stored, or null when it has none. */
export function readLogs(client: RedisClient, keys: QueueKeys, id: string): Promise<Buffer | null> {
  return client.hgetBuffer(keys.logs, id);
}

/** Bytes before each line's text: claims, attempt, claimed at, written at, length (log.lua). */
const ENTRY_HEAD_BYTES = 18;

/**
 * The lines in `packed` that belong to the job whose record's claim block holds `claims` and
 * `claimedAt` (its latest run): lines of a run it has not had were written by an earlier job of
 * the same id (a completed id added again) and are left out, as log.lua drops them. `run` null:
 * the record does not say (a final record without a claim block), every line is shown.
 */
export function parseLogLines(
  packed: Buffer | null,
  run: { claims: number; claimedAt: number } | null,
): JobLogLine[] {
  const out: JobLogLine[] = [];
  // A claim block never claimed (claims carried, no claim time) is a job created again over a
  // completed one (add.lua carries the claim count over): it has had no run, so no line is its.
  if (!packed || (run && run.claims > 0 && run.claimedAt === 0)) return out;
  for (let at = 0; at + ENTRY_HEAD_BYTES <= packed.length;) {
    const claims = packed.readUInt16BE(at);
    const attempt = packed.readUInt16BE(at + 2);
    const claimedAt = packed.readUIntBE(at + 4, 6);
    const writtenAt = packed.readUIntBE(at + 10, 6);
    const length = packed.readUInt16BE(at + 16);
    const end = at + ENTRY_HEAD_BYTES + length;
    if (end > packed.length) break;
    if (run && (claims > run.claims || (claims === run.claims && claimedAt !== run.claimedAt))) return [];
    out.push({
      attempt,
      at: new Date(writtenAt),
      line: packed.toString('utf8', at + ENTRY_HEAD_BYTES, end),
    });
    at = end;
  }
  return out;
}
