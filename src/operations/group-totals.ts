/**
 * What one partition's groups hold in all, read straight from their keys (no script: three reads,
 * each exact on its own), for the metrics.
 */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';

/**
 * What one partition's groups hold in all: waiting grouped jobs (gq's size), running ones (gc's
 * counts, paused marks taken off) and groups with waiting jobs (gn's size). O(running groups).
 */
export async function groupTotals(
  client: RedisClient,
  keys: QueueKeys,
): Promise<{ waiting: number; running: number; groups: number }> {
  const [waiting, groups, counts] = await Promise.all([
    client.zcard(keys.groupJobs),
    client.zcard(keys.groupBacklog),
    client.hgetall(keys.groupCounts),
  ]);
  let running = 0;
  for (const [field, value] of Object.entries(counts)) {
    // "<group>\0l" is a rate bucket; a paused group's count carries GROUP_PAUSED.
    if (!field.includes('\0')) running += Number(value) % GROUP_PAUSED;
  }
  return { waiting, running, groups };
}

/** What groups.lua adds to a paused group's running count (2^40). */
export const GROUP_PAUSED = 2 ** 40;
