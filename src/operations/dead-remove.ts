/** The `dead-remove` operation (dead-remove.lua): delete a dead job for good. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';

/** Delete a dead job for good; false when it is not dead. */
export async function deadRemove(client: RedisClient, keys: QueueKeys, id: string): Promise<boolean> {
  const reply = await runScript(
    client,
    script('dead-remove'),
    [keys.dead, keys.records, keys.errors, keys.logs],
    [id],
  );
  return reply === 1;
}
