/**
 * The `migrate-end` operation (migrate-end.lua): record layout 2 in the config record and lift the
 * migration's mark.
 */
import { UnsupportedLayoutError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { configKey, legacyKeys } from '../redis/keys.js';
import { ScriptMigrating } from '../redis/script-errors.js';
import { runScript, script } from '../redis/scripts.js';

/** Record format 2 and lift the mark (migrate-end.lua); throws when another run holds the mark. */
export async function endMigration(client: RedisClient, queue: string, mark: string): Promise<void> {
  const own = legacyKeys(queue);
  try {
    await runScript(client, script('migrate-end'), [configKey(queue), own.layout, own.partitions], [mark]);
  } catch (err) {
    if (err instanceof ScriptMigrating) {
      throw new UnsupportedLayoutError(queue, 1, { since: err.since, by: err.by });
    }
    throw err;
  }
}
