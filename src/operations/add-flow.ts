/** The `add-flow` operation (add-flow.lua): a flow's jobs written in one step, whole or nothing. */
import { wholeMsSince } from '../clock.js';
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num } from './reply.js';
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
}

/**
 * Write `jobs` (the root first, each parent before its children). Resolves to each job's due
 * time (ms). Throws ScriptFlowExists (nothing written) when one of the ids exists.
 */
export async function addFlow(
  client: RedisClient,
  keys: QueueKeys,
  jobs: readonly FlowInput[],
  settings: { eventsCap: number; groupConcurrency: number; calledAt: number },
): Promise<number[]> {
  const args: Array<string | number | Buffer> = [
    wholeMsSince(settings.calledAt),
    settings.groupConcurrency,
    settings.eventsCap,
    jobs.length,
  ];
  for (const job of jobs) {
    const when = 'delay' in job.when ? `d${job.when.delay}` : `a${job.when.at}`;
    args.push(job.id, when, job.record, job.parent + 1, job.ignoreChildFailure ? 'i' : '');
  }
  const reply = asArray(
    await runScript(
      client,
      script('add-flow'),
      [
        keys.waiting,
        keys.prioWaiting,
        keys.prioReady,
        keys.groupJobs,
        keys.groupsWaiting,
        keys.groupsReady,
        keys.groupCounts,
        keys.groupBacklog,
        keys.records,
        keys.flows,
        keys.flowsWaiting,
        keys.wake,
        keys.counters,
        keys.events,
      ],
      args,
    ),
    'add-flow',
  );
  return jobs.map((_, i) => num(reply, i, 'add-flow'));
}
