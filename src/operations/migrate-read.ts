/**
 * The `migrate-read` operation (migrate-read.lua): one chunk of a layout-1 partition, each id with
 * everything layout 1 holds about it.
 */
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { legacyJobKeys, type PartitionKeys } from './migrate-keys.js';
import { asArray, num, optionalStr, str } from './reply.js';

/** Where migrate-read takes ids from. */
export type Phase = 'active' | 'dead' | 'completed' | 'schedule' | 'jobs' | 'done' | 'cancelled';

/** Everything layout 1 holds about one id; null where it holds nothing. */
export interface LegacyJob {
  readonly id: string;
  /** The v1 envelope (`jobs`), encoded by the queue's codec. */
  readonly envelope: Buffer | null;
  /** The bookkeeping JSON (`meta`) exactly as stored: migrate-write compares it. */
  readonly meta: string | null;
  /** The lease string (`leases`) "token|startMs|workerId" exactly as stored. */
  readonly lease: string | null;
  /** The last error JSON (`errors`). */
  readonly error: string | null;
  /** Due time in `schedule` (waiting). */
  readonly due: number | null;
  /** Lease deadline in `active` (running). */
  readonly deadline: number | null;
  /** Died at, in `dead`. */
  readonly died: number | null;
  /** Completed at, in `completed` (kept completed jobs, data still in `jobs`). */
  readonly completed: number | null;
  /** Completed at, in `done` (ids of recently completed jobs, no data). */
  readonly done: number | null;
  /** Cancelled at, in `x` (ids only; the same key in layout 2). */
  readonly cancelled: number | null;
  /** The id has a layout-2 record already (an earlier chunk or phase wrote it). */
  readonly hasRecord: boolean;
}

/** Fields migrate-read returns per id. */
const PER_ID = 12;

/** One chunk of a layout-1 partition (migrate-read.lua), and the cursor to read the next from. */
export async function readChunk(
  client: RedisClient,
  keys: PartitionKeys,
  phase: Phase,
  cursor: string,
  chunk: number,
): Promise<{ next: string; jobs: LegacyJob[] }> {
  const o = keys.old;
  const reply = asArray(
    await runScript(
      client,
      script('migrate-read'),
      [...legacyJobKeys(o), keys.current.cancelled, keys.current.records],
      [phase, cursor, chunk],
    ),
    'migrate-read',
  );
  const next = str(reply, 0, 'migrate-read');
  const count = num(reply, 1, 'migrate-read');
  const jobs: LegacyJob[] = [];
  for (let i = 0; i < count; i++) {
    const b = 2 + i * PER_ID;
    const score = (k: number): number | null => {
      const text = optionalStr(reply, b + k);
      return text === null ? null : Number(text);
    };
    const envelope = reply[b + 1];
    jobs.push({
      id: str(reply, b, 'migrate-read'),
      envelope: Buffer.isBuffer(envelope) ? envelope : null,
      meta: optionalStr(reply, b + 2),
      lease: optionalStr(reply, b + 3),
      error: optionalStr(reply, b + 4),
      due: score(5),
      deadline: score(6),
      died: score(7),
      completed: score(8),
      done: score(9),
      cancelled: score(10),
      hasRecord: num(reply, b + 11, 'migrate-read') === 1,
    });
  }
  return { next, jobs };
}
