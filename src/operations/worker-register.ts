/**
 * Holder numbers (worker-register.lua): a claim block names its worker by a 4-byte number, and
 * `wk` maps numbers to worker ids, so `get` can say who holds or held a job.
 */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';

/** Register `workerId` in one partition; resolves to its new holder number there. */
export async function registerHolder(
  client: RedisClient,
  keys: QueueKeys,
  workerId: string,
): Promise<number> {
  const reply = await runScript(client, script('worker-register'), [keys.holders], ['register', workerId]);
  if (typeof reply !== 'number') throw new Error('worker-register: expected a number reply');
  return reply;
}

/** Drop holder `holder` from one partition's registry (the worker closed). */
export async function dropHolder(client: RedisClient, keys: QueueKeys, holder: number): Promise<void> {
  await runScript(client, script('worker-register'), [keys.holders], ['drop', holder]);
}
