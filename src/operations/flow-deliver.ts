/**
 * The `flow-deliver` operation (flow-deliver.lua): a flow child that ended in another queue than
 * its parent's is counted for the parent, once.
 */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';

/** 'applied': the parent counted the child; 'gone': the parent no longer waits; null: delivered already. */
export type DeliverOutcome = 'applied' | 'gone' | null;

/** Deliver the outbox entry of child `childId` of `child.name` to its parent in `parent.name`. */
export async function flowDeliver(
  client: RedisClient,
  input: {
    childId: string;
    child: { name: string; keys: QueueKeys };
    parent: { name: string; keys: QueueKeys; eventsCap: number; groupConcurrency: number };
  },
): Promise<DeliverOutcome> {
  const p = input.parent.keys;
  const reply = await runScript(
    client,
    script('flow-deliver'),
    [
      p.waiting,
      p.prioWaiting,
      p.prioReady,
      p.groupJobs,
      p.groupsWaiting,
      p.groupsReady,
      p.groupCounts,
      p.groupBacklog,
      p.records,
      p.flows,
      p.flowsWaiting,
      p.wake,
      p.counters,
      p.events,
      p.errors,
      p.dead,
      input.child.keys.flows,
    ],
    [
      input.childId,
      input.child.name,
      input.parent.name,
      input.parent.groupConcurrency,
      input.parent.eventsCap,
    ],
  );
  if (!Buffer.isBuffer(reply)) return null;
  const how = reply.toString();
  if (how !== 'applied' && how !== 'gone') throw new Error(`flow-deliver: unexpected reply ${how}`);
  return how;
}
