/**
 * The `release` operation: give a held job back without charging the attempt (release.lua), at a
 * shutdown, for a newer payload version, or as a snooze.
 */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { UNKNOWN_GROUP_CONCURRENCY, waitingKeys } from './waiting-keys.js';
import { guessDelay, runWheelAware, type Layout } from './wheel.js';

/** What a release needs. */
export interface ReleaseInput {
  /** The lease member the claim returned ("<claims>.<claimed at>|<id>"): the fence. */
  member: string;
  /** How long after now the job is due again (0: at once). */
  delayMs: number;
  eventsCap: number;
  layout: Layout;
  /** The queue's group concurrency, when known (frees the slot of a grouped job exactly). */
  groupConcurrency?: number;
  /** A snooze (the handler threw a SnoozeError): counted in `snoozed`, event `snoozed`. */
  snooze?: boolean;
}

/**
 * Hand the job held by `member` back, due again after `delayMs`, its attempt uncharged. True when
 * released; false when the lease was no longer held (the reaper or a cancel owns the job then).
 */
export async function release(client: RedisClient, keys: QueueKeys, input: ReleaseInput): Promise<boolean> {
  const layout = input.layout;
  const guess = layout.kind === 'wheel' && input.delayMs > 0 ? guessDelay(layout, input.delayMs) : [];
  const reply = await runWheelAware(client, 'release', keys, layout, guess, {
    keys: [
      ...waitingKeys(keys),
      keys.records,
      keys.leases,
      keys.wake,
      keys.events,
      keys.progress,
      keys.counters,
    ],
    args: [
      input.member,
      input.delayMs,
      input.groupConcurrency ?? UNKNOWN_GROUP_CONCURRENCY,
      input.eventsCap,
      input.snooze === true ? 's' : 'r',
    ],
  });
  return reply === 1;
}
