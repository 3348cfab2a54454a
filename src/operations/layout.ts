/** The `layout` operation: record or check where a queue's waiting jobs live (layout.lua). */
import { LayoutMismatchError } from '../errors.js';
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { ScriptLayoutMismatch } from '../redis/script-errors.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num, str } from './reply.js';
import { layoutName, type Layout } from './wheel.js';

/**
 * Record `wanted` ('zset' or 'wheel:<granularity ms>') as the layout of queue `queue` at its first
 * use, or check it against the stored one; with `wanted` null, adopt whatever is stored ('zset'
 * when nothing is). Resolves with the layout in force and the server's now; throws
 * LayoutMismatchError naming both layouts when they differ.
 */
export async function checkLayout(
  client: RedisClient,
  keys: QueueKeys,
  queue: string,
  wanted: string | null,
): Promise<{ layout: string; now: number }> {
  try {
    const reply = asArray(
      await runScript(
        client,
        script('layout'),
        [keys.layout, keys.schedule, keys.ready, keys.wheel],
        [wanted ?? ''],
      ),
      'layout',
    );
    return { layout: str(reply, 0, 'layout'), now: num(reply, 1, 'layout') };
  } catch (err) {
    if (err instanceof ScriptLayoutMismatch)
      throw new LayoutMismatchError(queue, err.stored, wanted ?? 'zset');
    throw err;
  }
}

/**
 * A script's layout refusal (DELAYQ_LAYOUT_MISMATCH) as the LayoutMismatchError users see, naming
 * `queue` and the layout the caller used; any other error as it came.
 */
export function layoutRefusal(err: unknown, queue: string, wanted: Layout): unknown {
  return err instanceof ScriptLayoutMismatch
    ? new LayoutMismatchError(queue, err.stored, layoutName(wanted))
    : err;
}
