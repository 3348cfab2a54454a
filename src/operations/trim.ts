/**
 * The `trim` operation (trim.lua): keep completed, cancelled and dead jobs within their retention
 * by count and age, and forget the worker-registry entries of workers long gone. Run by every
 * worker's Reaper duty (src/worker/reaper.ts), never on the hot path.
 */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num } from './reply.js';

/** A bound on a set of finished jobs; a count or age of 0 means no bound of that kind. */
export interface Retention {
  count: number;
  ageMs: number;
}

/** How many cancelled ids get() keeps answering 'cancelled' for, and for how long. */
export const KEEP_CANCELLED: Retention = { count: 10_000, ageMs: 7 * 24 * 3600 * 1000 };

/** Ids trimmed per set and call at most, so one call stays short; a backlog goes over the next calls. */
export const TRIM_MAX_PER_CALL = 1_000;

/**
 * How long a worker-registry entry outlives its worker's last trim: a closed worker drops its own
 * entry, one that crashed is forgotten after a day (holder numbers in records of its jobs then
 * show as unknown in get()).
 */
export const WORKER_ENTRY_MAX_AGE_MS = 24 * 3600 * 1000;

/** What a trim keeps. */
export interface TrimInput {
  completed: Retention;
  cancelled: Retention;
  dead: Retention;
  /** Default TRIM_MAX_PER_CALL. */
  maxPerCall?: number;
  /** Default WORKER_ENTRY_MAX_AGE_MS; 0 keeps every entry. */
  workerMaxAgeMs?: number;
  /**
   * The calling worker's holder number in this queue (partition): its entry is marked alive, so it
   * is never forgotten while the worker runs. Absent: the caller is not a worker.
   */
  holder?: number;
}

/** How many entries one trim dropped from each set. */
export interface TrimOutput {
  completed: number;
  cancelled: number;
  dead: number;
  workers: number;
  /** Log entries whose record was gone, dropped by the sweep (trim.lua). */
  logs: number;
}

/** Trim one queue (or partition). */
export async function trim(client: RedisClient, keys: QueueKeys, input: TrimInput): Promise<TrimOutput> {
  const reply = asArray(
    await runScript(
      client,
      script('trim'),
      [keys.completed, keys.cancelled, keys.dead, keys.records, keys.errors, keys.holders, keys.logs],
      [
        input.completed.count,
        input.completed.ageMs,
        input.cancelled.count,
        input.cancelled.ageMs,
        input.dead.count,
        input.dead.ageMs,
        input.maxPerCall ?? TRIM_MAX_PER_CALL,
        input.workerMaxAgeMs ?? WORKER_ENTRY_MAX_AGE_MS,
        input.holder ?? 0,
      ],
    ),
    'trim',
  );
  return {
    completed: num(reply, 0, 'trim'),
    cancelled: num(reply, 1, 'trim'),
    dead: num(reply, 2, 'trim'),
    workers: num(reply, 3, 'trim'),
    logs: num(reply, 4, 'trim'),
  };
}

/**
 * Trim every partition of a queue, one call each sent at once; the counts are summed. `holders`:
 * the calling worker's holder number in each partition (index = partition), when it is a worker.
 */
export async function trimAll(
  client: RedisClient,
  partitions: readonly QueueKeys[],
  input: Omit<TrimInput, 'holder'>,
  holders: readonly number[] = [],
): Promise<TrimOutput> {
  const outs = await Promise.all(
    partitions.map((keys, p) => {
      const holder = holders[p];
      return trim(client, keys, holder === undefined ? input : { ...input, holder });
    }),
  );
  return outs.reduce(
    (sum, out) => ({
      completed: sum.completed + out.completed,
      cancelled: sum.cancelled + out.cancelled,
      dead: sum.dead + out.dead,
      workers: sum.workers + out.workers,
      logs: sum.logs + out.logs,
    }),
    { completed: 0, cancelled: 0, dead: 0, workers: 0, logs: 0 },
  );
}
