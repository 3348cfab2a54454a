/**
 * Which queues exist (SCAN, never KEYS) and the server clock: what the CLI and the dashboard need
 * before they look at one queue. A queue exists once its config record does (even with no jobs);
 * a queue from before the config record is found by its jobs' meta hash.
 */
import { Cluster } from 'ioredis';
import { whenReachable } from '../definition/reach.js';
import type { RedisClient } from '../redis/connection.js';
import { configKey, legacyKeys, queueNameOfTag } from '../redis/keys.js';

/** Names of the known queues, sorted; scans at most `limit` queues' worth of keys per pattern. */
export async function discoverQueues(client: RedisClient, limit = 10_000): Promise<string[]> {
  await whenReachable(client);
  const names = new Set<string>();
  // The config record of every queue, and the layout-1 meta hash of queues from before the record
  // (every job has a meta entry while it is scheduled, active or dead): shown, so that opening one
  // says it needs `delayq migrate`.
  for (const pattern of [configKey('*'), legacyKeys('*').meta]) {
    const [before, after] = pattern.split('*') as [string, string];
    const nodes = client instanceof Cluster ? client.nodes('master') : [client];
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        for (const key of keys) {
          names.add(queueNameOfTag(key.slice(before.length, key.length - after.length)));
        }
      } while (cursor !== '0' && names.size < limit);
    }
  }
  return [...names].sort();
}

/** The Redis server's clock in epoch ms: the clock every due time is measured on. */
export async function serverNow(client: RedisClient): Promise<number> {
  const [s, us] = await client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}
