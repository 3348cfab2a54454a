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

/** Extend the leases of `held` to now + `leaseMs`. */
export async function extend(
  client: RedisClient,
  keys: QueueKeys,
  leaseMs: number,
  held: ReadonlyArray<{ id: string; token: string }>,
): Promise<ExtendOutput> {
  const args: Array<string | number> = [leaseMs];
  for (const job of held) args.push(job.id, job.token);
  const reply = asArray(
    await runScript(client, script('extend'), [keys.active, keys.leases], args),
    'extend',
  );
  const deadlines = held.map((_, i) => {
    const deadline = num(reply, i + 1, 'extend');
    return deadline === 0 ? null : deadline;
  });
  return { now: num(reply, 0, 'extend'), deadlines };
}
