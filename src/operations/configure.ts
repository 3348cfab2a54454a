/** The `configure` operation (configure.lua): change a queue's live settings (queue.configure()). */
import { UnsupportedLayoutError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { configKey } from '../redis/keys.js';
import { ScriptMigrating } from '../redis/script-errors.js';
import { runScript, script } from '../redis/scripts.js';
import { LEGACY_FORMAT, type LiveField } from './config-record.js';

/**
 * Write the live fields `fields` of queue `queue`'s record in one step (configure.lua); returns
 * the record's new settings version. Throws UnsupportedLayoutError while the queue is migrated.
 */
export async function writeLiveSettings(
  client: RedisClient,
  queue: string,
  fields: Partial<Record<LiveField, string>>,
): Promise<number> {
  try {
    const reply = await runScript(
      client,
      script('configure'),
      [configKey(queue)],
      Object.entries(fields).flat(),
    );
    return typeof reply === 'number' ? reply : Number(reply);
  } catch (err) {
    if (err instanceof ScriptMigrating) {
      throw new UnsupportedLayoutError(queue, LEGACY_FORMAT, { since: err.since, by: err.by });
    }
    throw err;
  }
}
