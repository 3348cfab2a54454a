/** The `extend` operation: push lease deadlines of held jobs, in one call (extend.lua). */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num } from './reply.js';

/** For each held job in order: its new deadline (server ms), or null when its lease was lost. */
export interface ExtendOutput {
  now: number;
  deadlines: Array<number | null>;
}

/** Extend the leases of `members` (lease members) to now + `leaseMs`; never shortens one. */
export async function extend(
  client: RedisClient,
  keys: QueueKeys,
  leaseMs: number,
  members: readonly string[],
  zmscore: boolean,
): Promise<ExtendOutput> {
  const reply = asArray(
    await runScript(client, script('extend'), [keys.leases], [leaseMs, zmscore ? 'm' : '', ...members]),
    'extend',
  );
  const deadlines = members.map((_, i) => {
    const deadline = num(reply, i + 1, 'extend');
    return deadline === 0 ? null : deadline;
  });
  return { now: num(reply, 0, 'extend'), deadlines };
}
