/**
 * The KEYS every layout-2 script that puts a job back in waiting or takes one out passes first, in
 * this order: the waiting sets of the default and prioritized classes, then the group keys
 * (docs/design/HOT-PATH.md §3.1, §4.11). Groups are not built yet (issue 16), but their keys are
 * passed already so the scripts' protocol does not change when they are.
 */
import type { QueueKeys } from '../redis/keys.js';

/** `s p r gq gw gr gc` of one queue (or partition). */
export function waitingKeys(keys: QueueKeys): string[] {
  return [
    keys.waiting,
    keys.prioWaiting,
    keys.prioReady,
    keys.groupJobs,
    keys.groupsWaiting,
    keys.groupsReady,
    keys.groupCounts,
  ];
}

/**
 * The group concurrency scripts are given while groups are not built: no job has a group, so no
 * script reads it (issue 16 takes it from the queue's config record).
 */
export const NO_GROUPS = 0;
