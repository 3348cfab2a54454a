/**
 * A warning at start-up when the server may evict keys: under memory pressure an evicting Redis
 * drops queue keys, and with them jobs, which no script can notice.
 */
import type { RedisClient } from './connection.js';

/** Warn through `warn` unless maxmemory-policy is noeviction (or cannot be read). */
export async function warnIfEvicting(client: RedisClient, warn: (message: string) => void): Promise<void> {
  try {
    const reply = (await client.call('CONFIG', 'GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy !== undefined && policy !== 'noeviction') {
      warn(
        `Redis maxmemory-policy is '${policy}': under memory pressure Redis may evict queue keys and lose jobs. Set maxmemory-policy noeviction`,
      );
    }
  } catch {
    // CONFIG is often disabled on managed servers; the policy then cannot be checked from here.
  }
}
