/**
 * The `pause` operation (pause.lua), and `isPaused`, the EXISTS of the `paused` key it writes. Each
 * works on every partition of a queue, one call per partition sent at once: the partitions are not
 * paused atomically together (each stops within one round trip of its own write). resume.ts undoes it.
 */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num } from './reply.js';

/** Pause every partition; true when at least one was not paused before. */
export async function pause(client: RedisClient, partitions: readonly QueueKeys[]): Promise<boolean> {
  const replies = await Promise.all(
    partitions.map(async (keys) =>
      asArray(await runScript(client, script('pause'), [keys.paused, keys.wake], []), 'pause'),
    ),
  );
  return replies.some((reply) => num(reply, 1, 'pause') === 1);
}

/**
 * Whether the queue is paused: true when any partition is (a pause that failed half way still
 * stops those partitions it reached, and that must show).
 */
export async function isPaused(client: RedisClient, partitions: readonly QueueKeys[]): Promise<boolean> {
  const found = await Promise.all(partitions.map((keys) => client.exists(keys.paused)));
  return found.some((n) => n > 0);
}
