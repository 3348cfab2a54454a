/** The `add-flow` operation (add-flow.lua): a flow's jobs written in one step, whole or nothing. */
import { wholeMsSince } from '../clock.js';
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num } from './reply.js';
import { waitingKeys } from './waiting-keys.js';
import type { When } from './add.js';

/** One job of a flow, ready to be written: a parent comes before its children. */
export interface FlowInput {
  id: string;
  when: When;
  /** The record (src/record/), with the flow flag. */
  record: Buffer;
  /** Index in the flow's list of this job's parent; -1 for the root (the first job). */
  parent: number;
  /** As a parent: a child that dies or is cancelled is ignored (onChildFailure 'ignore'). */
  ignoreChildFailure: boolean;
  /** Index in the call's queues of the job's queue; absent: 0, the root's. */
  queue?: number;
}

/** A queue a flow's jobs are in, with what its scripts take of its settings. */
export interface FlowQueue {
  name: string;
  keys: QueueKeys;
  eventsCap: number;
  /** The queue's recorded group concurrency, or UNKNOWN_GROUP_CONCURRENCY. */
  groupConcurrency: number;
}

/** The KEYS block add-flow.lua takes of each queue. */
function flowKeys(keys: QueueKeys): string[] {
  return [
    ...waitingKeys(keys),
    keys.records,
    keys.flows,
    keys.flowsWaiting,
    keys.wake,
    keys.counters,
    keys.events,
  ];
}

/**
 * Write `jobs` (the root first, each parent before its children) into `queues` (the root's first;
 * more than one only on one Redis). Resolves to each job's due time (ms). Throws
 * ScriptFlowExists (nothing written) when one of the ids exists in its queue.
 */
export async function addFlow(
  client: RedisClient,
  queues: readonly FlowQueue[],
  jobs: readonly FlowInput[],
  calledAt: number,
): Promise<number[]> {
  const args: Array<string | number | Buffer> = [wholeMsSince(calledAt), queues.length];
  for (const queue of queues) args.push(queue.name, queue.groupConcurrency, queue.eventsCap);
  args.push(jobs.length);
  for (const job of jobs) {
    const when = 'delay' in job.when ? `d${job.when.delay}` : `a${job.when.at}`;
    args.push(
      job.id,
      when,
      job.record,
      job.parent + 1,
      job.ignoreChildFailure ? 'i' : '',
      (job.queue ?? 0) + 1,
    );
  }
  const reply = asArray(
    await runScript(
      client,
      script('add-flow'),
      queues.flatMap((queue) => flowKeys(queue.keys)),
      args,
    ),
    'add-flow',
  );
  return jobs.map((_, i) => num(reply, i, 'add-flow'));
}
