/** The `cancel` operation (cancel.lua): take a job out of waiting, or end its running attempt. */
import type { RedisClient } from '../redis/connection.js';
import { queueKeys, type QueueKeys } from '../redis/keys.js';
import { readFlowPeer, type FlowPeer } from './config-record.js';
import { UNKNOWN_GROUP_CONCURRENCY, waitingKeys } from './waiting-keys.js';
import { runWheelAware, type Layout } from './wheel.js';

/** Where a cancel found the job: waiting (taken out of its set) or running (its lease ended). */
export type CancelOutcome = 'waiting' | 'running';

// A flow is at most 8 levels deep, so its other queues are all known after at most that many asks.
const MAX_ASKS = 10;

/**
 * Cancel a waiting or running job (a running one's holder is told by a `C <member>` wake
 * message); null when there is nothing to cancel (unknown, dead, completed, already cancelled).
 * A flow's parent with children in other queues (one Redis only): cancel.lua names the queues
 * whose keys it needs, and is called again with them, so its waiting children there go with it.
 */
export async function cancel(
  client: RedisClient,
  keys: QueueKeys,
  /**
   * groupConcurrency: the queue's, when known (a cancelled job's group is put back exactly);
   * name: the queue's (a flow's children in other queues name it).
   */
  input: { id: string; eventsCap: number; layout: Layout; groupConcurrency?: number; name?: string },
): Promise<CancelOutcome | null> {
  const own = [
    ...waitingKeys(keys),
    keys.records,
    keys.leases,
    keys.cancelled,
    keys.errors,
    keys.wake,
    keys.counters,
    keys.events,
    keys.progress,
    keys.dead,
    keys.flows,
    keys.flowsWaiting,
  ];
  const args = [input.id, input.groupConcurrency ?? UNKNOWN_GROUP_CONCURRENCY, input.eventsCap];
  const others: FlowPeer[] = [];
  for (let ask = 1; ; ask++) {
    // The wheel keeps no flows: its tail goes where a flow's other queues would.
    const flows = input.layout.kind !== 'wheel' && input.name !== undefined;
    const reply = await runWheelAware(client, 'cancel', keys, input.layout, [], {
      keys: [...own, ...others.flatMap(otherKeys)],
      args: flows
        ? [
            ...args,
            'F',
            input.name!,
            others.length,
            ...others.flatMap((peer) => [peer.name, peer.groupConcurrency, peer.eventsCap]),
          ]
        : args,
    });
    if (Array.isArray(reply) && String(reply[0]) === 'needs' && flows && ask < MAX_ASKS) {
      for (const name of reply.slice(1).map(String)) {
        others.push((await readFlowPeer(client, name)) ?? unrecorded(name));
      }
      continue;
    }
    // 'waiting' or 'running' (bulk strings, as Buffers); 0 when nothing was cancelled.
    if (!Buffer.isBuffer(reply)) {
      if (Array.isArray(reply))
        throw new Error(`cancel: still needs the keys of ${reply.slice(1).join(', ')}`);
      return null;
    }
    const how = reply.toString();
    if (how !== 'waiting' && how !== 'running') throw new Error(`cancel: unexpected reply ${how}`);
    return how;
  }
}

/** The 16 KEYS cancel.lua takes of each other queue of a flow. */
function otherKeys(peer: FlowPeer): string[] {
  const k = peer.keys;
  return [
    ...waitingKeys(k),
    k.records,
    k.cancelled,
    k.errors,
    k.counters,
    k.events,
    k.flows,
    k.flowsWaiting,
    k.wake,
  ];
}

/** A queue children are in whose record is gone: its keys, with the scripts' defaults. */
function unrecorded(name: string): FlowPeer {
  return {
    name,
    keys: queueKeys(name),
    eventsCap: 0,
    groupConcurrency: UNKNOWN_GROUP_CONCURRENCY,
    layout: 'zset',
    partitions: 1,
    codec: 'json',
  };
}
