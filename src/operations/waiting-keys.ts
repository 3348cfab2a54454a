/**
 * The KEYS every layout-2 script that puts a job back in waiting or takes one out passes first, in
 * this order: the waiting sets of the default and prioritized classes, then the group keys
 * (docs/ARCHITECTURE.md §3.1, §4.11): a grouped job waits in `gq`, and a path that ends a
 * grouped job's lease frees its group's slot in `gc` and puts the group back in turn (`gw`, `gr`);
 * `gn` counts each group's waiting jobs.
 */
import type { QueueKeys } from '../redis/keys.js';

/** `s p r gq gw gr gc gn` of one queue (or partition). */
export function waitingKeys(keys: QueueKeys): string[] {
  return [
    keys.waiting,
    keys.prioWaiting,
    keys.prioReady,
    keys.groupJobs,
    keys.groupsWaiting,
    keys.groupsReady,
    keys.groupCounts,
    keys.groupBacklog,
  ];
}

/**
 * The group concurrency a script is given by a caller that does not know the queue's (a Queue
 * opened before any worker recorded it): the script then puts a group with waiting jobs in turn
 * whatever its running count, and the claim, which always knows the value, takes a full group out.
 * So an unknown value can cost a claim one look, never leave a group waiting for nothing.
 */
export const UNKNOWN_GROUP_CONCURRENCY = 0;
