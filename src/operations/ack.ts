/** The `ack` operation: a job finished (ack.lua). */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';

/** Completed-job retention: keep up to `count` finished jobs, none older than `ageMs` (0: no age limit). */
export interface Retention {
  count: number;
  ageMs: number;
}

/** What an ack needs. */
export interface AckInput {
  id: string;
  token: string;
  /** The lease deadline this worker was last told, so a resent ack can be recognised. */
  knownDeadline: number;
  keepCompleted: Retention;
  eventsCap: number;
}

/** 'ok', or 'already' when a resent ack found its first copy applied. Throws ScriptLeaseLost when refused. */
export async function ack(client: RedisClient, keys: QueueKeys, input: AckInput): Promise<'ok' | 'already'> {
  const reply = await runScript(
    client,
    script('ack'),
    [keys.jobs, keys.meta, keys.active, keys.leases, keys.errors, keys.completed, keys.events],
    [
      input.id,
      input.token,
      input.knownDeadline,
      input.keepCompleted.count,
      input.keepCompleted.ageMs,
      input.eventsCap,
    ],
  );
  return Buffer.isBuffer(reply) && reply.toString() === 'ALREADY' ? 'already' : 'ok';
}
