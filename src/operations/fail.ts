/** The `fail` operation: an attempt failed; retry later or bury (fail.lua). */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { asArray, num, str } from './reply.js';
import { guessDelay, runWheelAware, type Layout } from './wheel.js';

/** What a fail needs. */
export interface FailInput {
  id: string;
  token: string;
  /** Delay before the retry, or null to bury the job now whatever attempts are left. */
  retryDelayMs: number | null;
  /** The error as recorded for get() and the dead set. */
  error: RecordedError;
  deadMaxCount: number;
  deadMaxAgeMs: number;
  eventsCap: number;
  /** Where the retry goes; default the schedule ZSET. */
  layout: Layout;
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
}

/** Where the job went: retried at `at`, dead since `at`, or 'already' for a resent fail. */
export type FailOutput =
  { outcome: 'retry'; at: number } | { outcome: 'dead'; at: number } | { outcome: 'already' };

/** Fail the attempt. Throws ScriptLeaseLost when the lease is not held. */
export async function fail(client: RedisClient, keys: QueueKeys, input: FailInput): Promise<FailOutput> {
  const layout = input.layout;
  const guess =
    layout.kind === 'wheel' && input.retryDelayMs !== null ? guessDelay(layout, input.retryDelayMs) : [];
  const reply = asArray(
    await runWheelAware(client, 'fail', keys, layout, guess, {
      keys: [
        keys.schedule,
        keys.jobs,
        keys.meta,
        keys.active,
        keys.leases,
        keys.dead,
        keys.errors,
        keys.wake,
        keys.events,
        keys.progress,
      ],
      args: [
        input.id,
        input.token,
        input.retryDelayMs ?? -1,
        JSON.stringify(input.error),
        input.deadMaxCount,
        input.deadMaxAgeMs,
        input.eventsCap,
        input.error.message.slice(0, 200),
      ],
    }),
    'fail',
  );
  const outcome = str(reply, 0, 'fail');
  if (outcome === 'ALREADY') return { outcome: 'already' };
  return { outcome: outcome === 'RETRY' ? 'retry' : 'dead', at: num(reply, 1, 'fail') };
}
