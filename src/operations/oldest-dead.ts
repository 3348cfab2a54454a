/** The oldest dead job ids of one partition, which purging the dead set reads page by page (a ZRANGE, no script). */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';

/** The ids of the `limit` oldest dead jobs of one partition. */
export function oldestDead(client: RedisClient, keys: QueueKeys, limit: number): Promise<string[]> {
  return client.zrange(keys.dead, 0, limit - 1);
}
