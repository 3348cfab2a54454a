/**
 * A queue's config record (`dq:{q}:config`, docs/PROTOCOL.md) as TypeScript sees it: the layout
 * version, the fields config.lua settles and configure.lua changes, and the read of its live
 * fields (an HMGET, no script).
 */
import type { RedisClient } from '../redis/connection.js';
import { configKey, queueKeys, type QueueKeys } from '../redis/keys.js';
import { UNKNOWN_GROUP_CONCURRENCY } from './waiting-keys.js';

/**
 * The job data layout version this code reads and writes (the record's `format`): 2, one record
 * per job (docs/ARCHITECTURE.md). Layout 1 (delayq 0.1) is converted by `delayq migrate`.
 */
export const CONFIG_FORMAT = 2;

/** The layout delayq 0.1 wrote, which this version refuses until `delayq migrate` converts it. */
export const LEGACY_FORMAT = 1;

/**
 * Fields `queue.configure()` may change: the group bounds. A client whose option differs adopts
 * the recorded value (with a one-time warning naming queue.configure), since the bound must be one
 * across all workers (src/definition/settings.ts).
 */
export const LIVE_FIELDS = ['groups.concurrency', 'groups.limit'] as const;

/** A live field of the config record. */
export type LiveField = (typeof LIVE_FIELDS)[number];

/** The record field counting live-setting changes (configure.lua adds one per change). */
export const SETTINGS_VERSION_FIELD = 'settings.version';

/**
 * The `groups` option after validation (src/definition/): what config.lua records and the claim
 * enforces.
 */
export interface GroupBounds {
  readonly concurrency: number;
  readonly limit: { readonly max: number; readonly perMs: number } | null;
}

/** A queue's config record, as stored in `dq:{q}:config` (docs/PROTOCOL.md). */
export interface ConfigRecord {
  /** Version of the job data layout the queue's keys hold. */
  readonly format: number;
  /** Where waiting jobs live: 'zset' or 'wheel:<granularity ms>'. */
  readonly layout: string;
  readonly partitions: number;
  /**
   * The count a job whose id or group the user chose is placed by: the count before the queue's
   * first re-partition (`partitions.base`), else `partitions`. Such a job's partition never
   * changes, so no id can exist twice and no group's bound splits (docs/CLUSTER.md).
   */
  readonly partitionsBase: number;
  /** The codec's name ('json', 'msgpack', 'protobuf' or a custom codec's own). */
  readonly codec: string;
  /** Events cap as the scripts take it: 0 off, N keep about N, -N only failures. */
  readonly events: number;
  /** The highest payload version a client of the queue has written or known, if recorded. */
  readonly version: number | null;
  /** The group bounds (live: queue.configure() changes them), or null when none are recorded. */
  readonly groups: GroupBounds | null;
  /** How many times the live settings were changed (configure.lua); 0 when never. */
  readonly settingsVersion: number;
}

/** What a client follows while it runs: the group bounds, the partition counts, the settings version. */
export type LiveSettings = Pick<ConfigRecord, 'groups' | 'settingsVersion' | 'partitions' | 'partitionsBase'>;

/**
 * The live settings of queue `queue` as recorded now: its group bounds, its partition counts
 * (repartition.lua raises them) and its settings version.
 */
export async function readLiveSettings(client: RedisClient, queue: string): Promise<LiveSettings> {
  const [concurrency, limit, version, partitions, base] = await client.hmget(
    configKey(queue),
    'groups.concurrency',
    'groups.limit',
    SETTINGS_VERSION_FIELD,
    'partitions',
    'partitions.base',
  );
  const count = Number(partitions ?? 1);
  return {
    groups: parseGroups(concurrency ?? undefined, limit ?? undefined),
    settingsVersion: Number(version ?? 0),
    partitions: count,
    partitionsBase: base ? Number(base) : count,
  };
}

/** The recorded group bounds: `groups.concurrency` and `groups.limit` ('<max>/<per ms>' or 'none'). */
export function parseGroups(concurrency: string | undefined, limit: string | undefined): GroupBounds | null {
  if (concurrency === undefined) return null;
  const rate = limit === undefined || limit === 'none' ? null : /^(\d+)\/(\d+)$/.exec(limit);
  return {
    concurrency: Number(concurrency),
    limit: rate ? { max: Number(rate[1]), perMs: Number(rate[2]) } : null,
  };
}

/**
 * What a flow with children in queue `queue` (one Redis only) needs of that queue's record: its
 * keys, events cap and group concurrency for the scripts, and its layout, partitions and codec
 * for the checks of addFlow. null when nothing has recorded the queue yet. One HMGET, no script.
 */
export interface FlowPeer {
  readonly name: string;
  readonly keys: QueueKeys;
  readonly eventsCap: number;
  /** The recorded group concurrency, or UNKNOWN_GROUP_CONCURRENCY. */
  readonly groupConcurrency: number;
  readonly layout: string;
  readonly partitions: number;
  readonly codec: string;
}

/** The record of queue `queue` as a flow of another queue needs it, or null when there is none. */
export async function readFlowPeer(client: RedisClient, queue: string): Promise<FlowPeer | null> {
  const keys = queueKeys(queue);
  const [format, layout, partitions, codec, events, concurrency] = await client.hmget(
    configKey(queue),
    'format',
    'layout',
    'partitions',
    'codec',
    'events',
    'groups.concurrency',
  );
  if (format === null) return null;
  return {
    name: queue,
    keys,
    eventsCap: Number(events ?? 0),
    groupConcurrency: concurrency === null ? UNKNOWN_GROUP_CONCURRENCY : Number(concurrency),
    layout: layout ?? 'zset',
    partitions: Number(partitions ?? 1),
    codec: codec ?? 'json',
  };
}
