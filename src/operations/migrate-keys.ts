/**
 * The keys of one partition as the migrate-*.lua scripts take them (docs/ARCHITECTURE.md §10): its
 * layout-1 and layout-2 keys, and the layout-1 keys that hold a job in the order migrate-read,
 * -write and -seal take them first.
 */
import type { LegacyQueueKeys, QueueKeys } from '../redis/keys.js';

/** The layout-1 and layout-2 keys of one partition. */
export interface PartitionKeys {
  readonly old: LegacyQueueKeys;
  readonly current: QueueKeys;
}

/** The layout-1 keys that hold a job, in the order migrate-read, -write and -seal take them first. */
export function legacyJobKeys(o: PartitionKeys['old']): string[] {
  return [o.schedule, o.jobs, o.meta, o.active, o.leases, o.dead, o.errors, o.completed, o.done];
}
