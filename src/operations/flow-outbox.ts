/** The `flow-outbox` operation (flow-outbox.lua): a page of a queue's undelivered flow outbox entries. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, str } from './reply.js';

/** One page of the scan: the next cursor ('0': done) and each entry's child and parent queue ('' unknown). */
export interface OutboxPage {
  cursor: string;
  entries: Array<{ childId: string; parentQueue: string }>;
}

/** The outbox entries of `keys`'s queue from `cursor` on, about `count` fields scanned. */
export async function flowOutbox(
  client: RedisClient,
  keys: QueueKeys,
  cursor: string,
  count: number,
): Promise<OutboxPage> {
  const reply = asArray(
    await runScript(client, script('flow-outbox'), [keys.flows], [cursor, count]),
    'flow-outbox',
  );
  const entries: OutboxPage['entries'] = [];
  for (let i = 1; i + 1 < reply.length; i += 2) {
    entries.push({ childId: str(reply, i, 'flow-outbox'), parentQueue: str(reply, i + 1, 'flow-outbox') });
  }
  return { cursor: str(reply, 0, 'flow-outbox'), entries };
}
