/** The `repartition` operation (repartition.lua): raise a queue's recorded partition count. */
import { RepartitionRefusedError, UnsupportedLayoutError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { configKey } from '../redis/keys.js';
import { ScriptMigrating, ScriptRepartitionRefused } from '../redis/script-errors.js';
import { runScript, script } from '../redis/scripts.js';
import { LEGACY_FORMAT } from './config-record.js';
import { asArray, num } from './reply.js';

/** What repartition.lua recorded. */
export interface RepartitionOutput {
  /** The count before the call. */
  from: number;
  /** The count now recorded (`from` when the call asked for it). */
  to: number;
  /** The count a job whose id or group the user chose is placed by. */
  base: number;
  /** The record's settings version now. */
  settingsVersion: number;
}

/**
 * Record `count` partitions for queue `queue` in one step (repartition.lua). Throws
 * RepartitionRefusedError (a smaller count, groups, the wheel, no record) or UnsupportedLayoutError
 * (being migrated), having written nothing.
 */
export async function repartition(
  client: RedisClient,
  queue: string,
  count: number,
): Promise<RepartitionOutput> {
  let reply;
  try {
    reply = asArray(
      await runScript(client, script('repartition'), [configKey(queue)], [count]),
      'repartition',
    );
  } catch (err) {
    if (err instanceof ScriptRepartitionRefused) throw new RepartitionRefusedError(queue, err.reason);
    if (err instanceof ScriptMigrating) {
      throw new UnsupportedLayoutError(queue, LEGACY_FORMAT, { since: err.since, by: err.by });
    }
    throw err;
  }
  return {
    from: num(reply, 0, 'repartition'),
    to: num(reply, 1, 'repartition'),
    base: num(reply, 2, 'repartition'),
    settingsVersion: num(reply, 3, 'repartition'),
  };
}
