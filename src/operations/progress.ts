/** The `progress` operation: record a running job's progress value, fenced by its lease (progress.lua). */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';

/** What a progress write needs. */
export interface ProgressInput {
  /** The lease member the claim returned ("<claims>.<claimed at>|<id>"): the fence. */
  member: string;
  /** The value as JSON, already checked and within `capBytes` (src/worker/progress-value.ts). */
  json: string;
  /** The longest value the script accepts, in bytes; the script refuses anything longer. */
  capBytes: number;
}

/** Write the progress of the job `member` holds. Throws ScriptLeaseLost when it holds no valid lease. */
export async function progress(client: RedisClient, keys: QueueKeys, input: ProgressInput): Promise<void> {
  await runScript(
    client,
    script('progress'),
    [keys.leases, keys.progress, keys.cancelled],
    [input.member, input.json, input.capBytes],
  );
}
