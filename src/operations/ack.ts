/**
 * The `ack` operation: jobs finished. Acks travel inside the claim call (claim.lua, §4.2); an ack
 * on its own is a claim of none.
 */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { ScriptLeaseLost } from '../redis/script-errors.js';
import { claim, type AckItem, type AckOutcome, type ClaimInput } from './claim.js';

export type { AckItem, AckOutcome } from './claim.js';

/** What an ack-only call needs besides the acks: the claim's settings (nothing is claimed). */
export type AckSettings = Omit<ClaimInput, 'limit' | 'acks' | 'buckets'>;

/** Ack `acks` in one atomic call (a claim of none); the outcomes are in the same order. */
export async function ackOnly(
  client: RedisClient,
  keys: QueueKeys,
  acks: readonly AckItem[],
  settings: AckSettings,
): Promise<AckOutcome[]> {
  if (acks.length === 0) return [];
  return (await claim(client, keys, { ...settings, limit: 0, acks })).acks;
}

/** Ack one job: 'ok', or 'already' for a resent ack. Throws ScriptLeaseLost when refused. */
export async function ack(
  client: RedisClient,
  keys: QueueKeys,
  item: AckItem,
  settings: AckSettings,
): Promise<'ok' | 'already'> {
  const [outcome] = await ackOnly(client, keys, [item], settings);
  if (!outcome || outcome.status === 'lost')
    throw new ScriptLeaseLost(outcome?.status === 'lost' ? outcome.detail : 'no reply');
  return outcome.status;
}
