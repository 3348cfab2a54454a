/** The `fail` operation: an attempt failed; retry later or bury (fail.lua). */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { asArray, num, str } from './reply.js';
import { UNKNOWN_GROUP_CONCURRENCY, waitingKeys } from './waiting-keys.js';
import { guessDelay, runWheelAware, type Layout } from './wheel.js';

/** What a fail needs. */
export interface FailInput {
  /** The lease member the claim returned ("<claims>.<claimed at>|<id>"): the fence. */
  member: string;
  /** Delay before the retry, or null to bury the job now whatever attempts are left. */
  retryDelayMs: number | null;
  /** The error as recorded for get() and the dead set; `unrecoverable` buries at once. */
  error: RecordedError;
  deadMaxCount: number;
  deadMaxAgeMs: number;
  eventsCap: number;
  /** Where the retry goes: the zset strategies' waiting sets, or the wheel. */
  layout: Layout;
  /** The queue's group concurrency, when known (frees the slot of a grouped job exactly). */
  groupConcurrency?: number;
}

/** An error as stored in Redis. */
export interface RecordedError {
  name: string;
  message: string;
  stack?: string;
  /** Server time it was recorded, when known. */
  at?: number;
  attempt?: number;
  /** The handler ended the job for good (UnrecoverableError): buried with attempts left unused. */
  unrecoverable?: boolean;
  /** The token ("<claims>.<claimed at>") of the lease whose attempt failed, written by the script. */
  token?: string;
}

/** Where the job went: retried at `at`, dead since `at`, or 'already' for a resent fail. */
export type FailOutput =
  { outcome: 'retry'; at: number } | { outcome: 'dead'; at: number } | { outcome: 'already' };

// The event carries a short reason; the whole error is in `e`.
const REASON_MAX_CHARS = 200;

/** Fail the attempt. Throws ScriptLeaseLost when the member holds no valid lease. */
export async function fail(client: RedisClient, keys: QueueKeys, input: FailInput): Promise<FailOutput> {
  const layout = input.layout;
  const guess =
    layout.kind === 'wheel' && input.retryDelayMs !== null ? guessDelay(layout, input.retryDelayMs) : [];
  const unrecoverable = input.error.unrecoverable === true;
  const reply = asArray(
    await runWheelAware(client, 'fail', keys, layout, guess, {
      keys: [
        ...waitingKeys(keys),
        keys.records,
        keys.leases,
        keys.dead,
        keys.errors,
        keys.wake,
        keys.counters,
        keys.events,
        keys.progress,
        keys.cancelled,
        keys.flows,
        keys.flowsWaiting,
      ],
      args: [
        input.member,
        input.retryDelayMs ?? -1,
        // at, attempt and token are the script's to write, from the server clock and the record.
        JSON.stringify(input.error),
        unrecoverable ? 1 : 0,
        input.deadMaxCount,
        input.deadMaxAgeMs,
        input.groupConcurrency ?? UNKNOWN_GROUP_CONCURRENCY,
        input.error.message.slice(0, REASON_MAX_CHARS),
        input.eventsCap,
      ],
    }),
    'fail',
  );
  const outcome = str(reply, 0, 'fail');
  if (outcome === 'ALREADY') return { outcome: 'already' };
  return { outcome: outcome === 'RETRY' ? 'retry' : 'dead', at: num(reply, 1, 'fail') };
}
