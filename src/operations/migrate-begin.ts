/**
 * The `migrate-begin` operation (migrate-begin.lua): mark a queue as being migrated. It touches
 * only the config record, so a migration runs on Redis Cluster too.
 */
import { UnsupportedLayoutError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { configKey } from '../redis/keys.js';
import { ScriptMigrating } from '../redis/script-errors.js';
import { runScript, script, type Reply } from '../redis/scripts.js';
import { asArray, num, str } from './reply.js';

/** What the config record gets at begin where it lacks a field (a queue from before the record). */
export interface BeginDefaults {
  readonly layout: string;
  readonly partitions: number;
  readonly codec: string;
  readonly events: string;
}

/** migrate-begin's answer: 'done' when the queue is in layout 2 already. */
export type Begun =
  | { readonly status: 'begun' | 'resumed'; readonly now: number; readonly mark: string }
  | { readonly status: 'done'; readonly now: number };

/**
 * Mark queue `queue` as being migrated by `who` (migrate-begin.lua). Throws UnsupportedLayoutError
 * naming the other migration when one is marked and `resume` is false.
 */
export async function beginMigration(
  client: RedisClient,
  queue: string,
  who: string,
  resume: boolean,
  defaults: BeginDefaults,
): Promise<Begun> {
  let reply: Reply[];
  try {
    reply = asArray(
      await runScript(
        client,
        script('migrate-begin'),
        [configKey(queue)],
        [
          who,
          resume ? '1' : '0',
          defaults.layout,
          String(defaults.partitions),
          defaults.codec,
          defaults.events,
        ],
      ),
      'migrate-begin',
    );
  } catch (err) {
    if (err instanceof ScriptMigrating) {
      throw new UnsupportedLayoutError(queue, 1, { since: err.since, by: err.by });
    }
    throw err;
  }
  const status = str(reply, 0, 'migrate-begin');
  const now = num(reply, 1, 'migrate-begin');
  if (status === 'done') return { status, now };
  if (status !== 'begun' && status !== 'resumed')
    throw new Error(`migrate-begin: unexpected status ${status}`);
  return { status, now, mark: str(reply, 2, 'migrate-begin') };
}
