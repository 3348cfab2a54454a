/** The `child-results` operation (child-results.lua): how each child of a flow's parent ended. */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, str } from './reply.js';

/** How one child ended, as flow.lua records it for its parent. */
export type ChildEnd =
  /** Completed; `result` is the codec's bytes of its handler's value (absent: none was sent). */
  | { kind: 'completed'; result?: Buffer }
  /** Died or was cancelled, and the parent ignores that (onChildFailure 'ignore'). */
  | { kind: 'ignored' }
  /** Not ended yet. */
  | { kind: 'pending' };

/** Each child of parent `id`, in the order its flow named them; empty when `id` is no live parent. */
export async function childResults(
  client: RedisClient,
  keys: QueueKeys,
  id: string,
): Promise<Array<{ id: string; queue?: string; end: ChildEnd }>> {
  const reply = asArray(
    await runScript(client, script('child-results'), [keys.flows], [id]),
    'child-results',
  );
  const out: Array<{ id: string; queue?: string; end: ChildEnd }> = [];
  for (let i = 0; i + 1 < reply.length; i += 2) {
    const mark = reply[i + 1];
    // A child in another queue is named '<id>\1<queue>' (flow.lua); its result is kept here too.
    const [child, queue] = str(reply, i, 'child-results').split('\u0001') as [string, string?];
    const named = queue === undefined ? { id: child } : { id: child, queue };
    if (!Buffer.isBuffer(mark) || mark.length === 0) {
      out.push({ ...named, end: { kind: 'pending' } });
    } else if (mark[0] === 0x31) {
      out.push({ ...named, end: { kind: 'completed', result: mark.subarray(1) } });
    } else if (mark[0] === 0x30) {
      out.push({ ...named, end: { kind: 'completed' } });
    } else {
      out.push({ ...named, end: { kind: 'ignored' } });
    }
  }
  return out;
}
