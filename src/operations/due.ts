/**
 * Read-side operations for purge: the oldest dead job ids of one partition. (The due figures, the
 * counts and the due histogram, are one read of counts.lua: src/operations/inspect.ts.)
 */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';

/** The ids of the `limit` oldest dead jobs of one partition. */
export function oldestDead(client: RedisClient, keys: QueueKeys, limit: number): Promise<string[]> {
  return client.zrange(keys.dead, 0, limit - 1);
}
