/** The `reap` operation: return or bury jobs whose lease expired (reap.lua). */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num } from './reply.js';
import { UNKNOWN_GROUP_CONCURRENCY, waitingKeys } from './waiting-keys.js';
import { wheelTail, type Layout } from './wheel.js';

/** What one reap did, and the earliest lease deadline left (-1: none). */
export interface ReapOutput {
  returned: number;
  buried: number;
  nextDeadline: number;
}

/** What a reap needs. */
export interface ReapInput {
  /** Expired leases ended per call at most. */
  limit: number;
  deadMaxCount: number;
  deadMaxAgeMs: number;
  eventsCap: number;
  layout: Layout;
  /** The queue's group concurrency, when known. */
  groupConcurrency?: number;
}

/** Reap up to `limit` expired leases. */
export async function reap(client: RedisClient, keys: QueueKeys, input: ReapInput): Promise<ReapOutput> {
  // Reaped jobs are due now: in the wheel they go to ready, so no bucket is ever needed.
  const tail = wheelTail(keys, input.layout);
  const reply = asArray(
    await runScript(
      client,
      script('reap'),
      [
        ...waitingKeys(keys),
        keys.records,
        keys.leases,
        keys.dead,
        keys.errors,
        keys.wake,
        keys.counters,
        keys.events,
        keys.progress,
        keys.flows,
        keys.flowsWaiting,
        ...tail.keys,
      ],
      [
        input.limit,
        input.deadMaxCount,
        input.deadMaxAgeMs,
        input.groupConcurrency ?? UNKNOWN_GROUP_CONCURRENCY,
        input.eventsCap,
        ...tail.args,
      ],
    ),
    'reap',
  );
  return {
    returned: num(reply, 0, 'reap'),
    buried: num(reply, 1, 'reap'),
    nextDeadline: num(reply, 2, 'reap'),
  };
}
