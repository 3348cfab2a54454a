/**
 * Every Redis key and channel delayq uses is named here and nowhere else. All keys of one queue
 * share the hash tag `{queue}`, so every script touches a single slot and works on Redis Cluster.
 * A queue with `partitions: P > 1` has P such sets of keys, tagged `{queue#0}` ... `{queue#P-1}`.
 */
import { ValidationError } from '../errors.js';

/**
 * The keys of one queue (or one partition of it) in layout 2 (docs/ARCHITECTURE.md §3.1). A
 * waiting job lives in exactly one of `waiting`, `prioWaiting`, `prioReady` or `groupJobs` (the
 * wheel: a bucket or `ready`), and its record's flags say which one.
 */
// A type alias rather than an interface, so Object.values/entries keep the string type.
export type QueueKeys = {
  /** HASH id -> the job's record (header + payload; or a completed, cancelled or dead record). */
  readonly records: string;
  /** ZSET id -> due ms: waiting jobs of the default class (no priority, no group). */
  readonly waiting: string;
  /** ZSET "<prio>:<id>" -> due ms: waiting prioritized jobs that are not due yet. */
  readonly prioWaiting: string;
  /** ZSET "<prio>:<id>" -> (prio + 1024) * 2^42 + due: due prioritized jobs, in claim order. */
  readonly prioReady: string;
  /** ZSET, all scores 0: "<group>\0<due: 6 bytes BE><id>" of waiting grouped jobs. */
  readonly groupJobs: string;
  /** ZSET group -> due ms of its head: groups with a free slot whose head is not due. */
  readonly groupsWaiting: string;
  /** ZSET group -> turn: groups with a free slot and a due head, served lowest turn first. */
  readonly groupsReady: string;
  /**
   * HASH group -> running count (deleted at 0), plus GROUP_PAUSED while the group is paused (so a
   * paused group's count is never below any bound: src/scripts/includes/groups.lua);
   * "<group>\0l" -> the group's rate bucket.
   */
  readonly groupCounts: string;
  /**
   * ZSET group -> its waiting jobs (the count of its members in `groupJobs`), kept by every script
   * that puts a grouped job in or takes one out: groups by backlog without reading their jobs.
   */
  readonly groupBacklog: string;
  /** ZSET lease member "<claims>.<claimed-at>|<id>[\0<group>]" -> lease deadline ms. */
  readonly leases: string;
  /** ZSET id -> completed at ms; the id's completed record stays in `records` while it is here. */
  readonly completed: string;
  /** ZSET id -> cancelled at ms; the id's cancelled record stays in `records` while it is here. */
  readonly cancelled: string;
  /** ZSET id -> died at ms; the full record stays in `records` (for dead.retry). */
  readonly dead: string;
  /** HASH id -> JSON of the job's last error. */
  readonly errors: string;
  /** STRING, present while the queue (or this partition) is paused; value: paused-at ms. */
  readonly paused: string;
  /** HASH of counters: totals, the lateness histogram and per-second ring slots (§7). */
  readonly counters: string;
  /** HASH holder number -> "<worker id>|<started ms>"; field "#" = the last number issued. */
  readonly holders: string;
  /** Pub/sub channel: wake messages ("<due>", "P", "R <head>", "C <member>", "G": settings changed). */
  readonly wake: string;
  /** STREAM of job events: failures always, every event with `events: 'all'`; capped. */
  readonly events: string;
  /** ZSET token -> start time of recent job starts, for the queue-wide rate limit. */
  readonly limiter: string;
  /** HASH id -> the running job's last progress value (JSON, size-capped). */
  readonly progress: string;
  /**
   * HASH flow bookkeeping (src/scripts/includes/flow.lua): "p\0<parent>" -> children not ended,
   * "k\0<parent>" -> its children's ids joined by "\0", "o\0<parent>" -> "i" (onChildFailure
   * 'ignore'), "c\0<child>" -> its parent's id, "r\0<child>" -> how it ended (its result).
   */
  readonly flows: string;
  /** ZSET parent id -> its own due ms: flow parents waiting for their children ('waiting-children'). */
  readonly flowsWaiting: string;
  /**
   * HASH id -> the job's log lines (job.log), packed; kept while the job's record is (deleted with
   * it by trim.lua and dead-remove.lua, and by trim.lua's sweep when a record went another way).
   * Field "\0": that sweep's HSCAN cursor (no id holds a control character).
   */
  readonly logs: string;
  /**
   * HASH: the queue's config record. Always in the queue's own tag `{name}`, also for a
   * partition's keys (one record for the whole queue), so no partition script may take it in KEYS.
   */
  readonly config: string;
  /** LIST of job ids that are due, in due order (wheel strategy): workers take from its head. */
  readonly ready: string;
  /** ZSET bucket start -> bucket end (epoch ms): the index of the wheel's non-empty buckets. */
  readonly wheel: string;
  /**
   * HASH id -> due ms of every job waiting in the wheel, in a bucket or in `ready` (negative: pushed
   * straight into `ready`); HLEN is the wheel's count. The lists hold bare ids, so this is where a
   * waiting job's due time is found (src/scripts/includes/wheel.lua).
   */
  readonly wheelCount: string;
  /** The prefix of the wheel's bucket LISTs; build a bucket's key with wheelBucketKey(). */
  readonly wheelBuckets: string;
  /** HASH schedule name -> JSON definition of a repeating schedule (src/schedule/). */
  readonly schedules: string;
  /** HASH schedule name -> encoded payload template of the schedule's jobs. */
  readonly schedulePayloads: string;
  /** ZSET schedule name -> due time of the last occurrence added: never added again, and when to add the next. */
  readonly scheduleLast: string;
  /** Pub/sub channel: "a schedule's next step moved earlier", with that time, for sleeping schedulers. */
  readonly scheduleWake: string;
};

/**
 * The keys of one queue (or partition) in layout 1, for `delayq migrate` only: it reads them and
 * converts them to layout 2. Nothing else may use them.
 */
export type LegacyQueueKeys = {
  readonly schedule: string;
  readonly jobs: string;
  readonly meta: string;
  readonly active: string;
  readonly leases: string;
  readonly token: string;
  readonly dead: string;
  readonly errors: string;
  readonly completed: string;
  readonly done: string;
  readonly events: string;
  /** STRING the queue's layout ('zset' or 'wheel:<ms>'), from before the config record. */
  readonly layout: string;
  /** STRING the partition count, from before the config record; in the queue's own tag. */
  readonly partitions: string;
  /** ZSET token -> start ms of recent starts (the rate limit; layout 2 names it `lim`). */
  readonly limiter: string;
  /** Wheel layout: LIST of due ids, ZSET bucket start -> end, STRING count; see legacyWheelBucketKey. */
  readonly ready: string;
  readonly wheel: string;
  readonly wheelCount: string;
};

/** The prefix of every delayq key. */
export const KEY_PREFIX = 'dq';

const MAX_QUEUE_NAME_BYTES = 200;

/**
 * Throws ValidationError unless `name` can be used as a queue name, that is inside a hash tag:
 * `dq:{<name>}:<role>`. Colons are fine there (braces are refused, so the tag ends at the only `}`
 * and no name can reach another queue's keys); glob characters (`* ? [ ] \`) are allowed too, and
 * must be escaped in ACL key patterns (docs/SECURITY.md).
 */
export function assertQueueName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new ValidationError(`queue name must be a non-empty string, got ${JSON.stringify(name)}`);
  }
  // Ill-formed UTF-16 (a lone surrogate) is sent as U+FFFD: two different names would share keys.
  if (/\p{Cs}/u.test(name)) {
    throw new ValidationError(
      `queue name ${JSON.stringify(name)} contains a lone surrogate (not well-formed Unicode); two such names would share keys`,
    );
  }
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_QUEUE_NAME_BYTES) {
    throw new ValidationError(`queue name is ${bytes} bytes in UTF-8; keep it to ${MAX_QUEUE_NAME_BYTES}`);
  }
  // Braces would end the hash tag early and scatter the queue's keys over slots.
  if (/[{}]/.test(name)) {
    throw new ValidationError(
      `queue name ${JSON.stringify(name)} may not contain braces: it sits in a hash tag`,
    );
  }
  // `q#3` is the hash tag of partition 3 of queue `q`: a queue of that name would share its keys.
  if (/#\d+$/.test(name)) {
    throw new ValidationError(
      `queue name ${JSON.stringify(name)} may not end in '#' and digits: that is how partitions are tagged`,
    );
  }
  // Control and format characters (newlines, NUL, bidi overrides, zero-width joiners) and white
  // space make a name print as another one in logs, the CLI and the dashboard.
  if (/[\s\p{Cc}\p{Cf}]/u.test(name)) {
    throw new ValidationError(
      `queue name ${JSON.stringify(name)} may not contain white space, control or format characters`,
    );
  }
}

/** The keys of queue `name`. */
export function queueKeys(name: string): QueueKeys {
  assertQueueName(name);
  return keysWithTag(name);
}

/**
 * The queue a hash tag found in a key belongs to: the tag itself, or for a partition's tag
 * `name#i` the queue `name` (no queue name ends in `#<digits>`, so this cannot mistake one).
 */
export function queueNameOfTag(tag: string): string {
  return tag.replace(/#\d+$/, '');
}

/** Most partitions a queue may have. */
export const MAX_PARTITIONS = 1024;

/**
 * The keys of every partition of queue `name`, partition i at index i. One partition is the queue
 * itself (`queueKeys(name)`, today's keys exactly); with more, partition i has the tag `{name#i}`,
 * which no valid queue name can have (assertQueueName refuses names ending in `#<digits>`). A queue
 * re-partitioned from one partition (`base` 1, its config record's `partitions.base`) keeps its own
 * keys as partition 0, where its jobs are.
 */
export function partitionKeys(name: string, partitions: number, base = partitions): QueueKeys[] {
  assertQueueName(name);
  assertPartitions(partitions);
  if (partitions === 1) return [keysWithTag(name)];
  // Grown from one partition (a re-partition, `base` 1): partition 0 stays the queue's own keys.
  return Array.from({ length: partitions }, (_, i) =>
    keysWithTag(i === 0 && base === 1 ? name : `${name}#${i}`),
  );
}

/** Throws ValidationError unless `partitions` is a whole number from 1 to MAX_PARTITIONS. */
export function assertPartitions(partitions: unknown): asserts partitions is number {
  if (
    typeof partitions !== 'number' ||
    !Number.isInteger(partitions) ||
    partitions < 1 ||
    partitions > MAX_PARTITIONS
  ) {
    throw new ValidationError(
      `partitions must be a whole number from 1 to ${MAX_PARTITIONS}, got ${String(partitions)}`,
      'partitions',
    );
  }
}

/**
 * HASH: the queue's config record (format, layout, partitions, codec, events, version), written by
 * its first client (config.lua) and checked by every later one. In the queue's own tag `{name}`,
 * never a partition's: one record for the whole queue. docs/PROTOCOL.md lists its fields.
 */
export function configKey(name: string): string {
  assertQueueName(name);
  return `${KEY_PREFIX}:{${name}}:config`;
}

/**
 * Legacy (before the config record): STRING the partition count of queue `name`, recorded at the
 * first use of a partitioned queue, in the queue's own tag. Read once, by config.lua, to build the
 * config record of a queue created before it; never written any more.
 */
export function partitionCountKey(name: string): string {
  assertQueueName(name);
  return `${KEY_PREFIX}:{${name}}:partitions`;
}

function keysWithTag(tag: string): QueueKeys {
  const base = `${KEY_PREFIX}:{${tag}}:`;
  return {
    records: `${base}j`,
    waiting: `${base}s`,
    prioWaiting: `${base}p`,
    prioReady: `${base}r`,
    groupJobs: `${base}gq`,
    groupsWaiting: `${base}gw`,
    groupsReady: `${base}gr`,
    groupCounts: `${base}gc`,
    groupBacklog: `${base}gn`,
    leases: `${base}a`,
    completed: `${base}c`,
    cancelled: `${base}x`,
    dead: `${base}d`,
    errors: `${base}e`,
    paused: `${base}z`,
    counters: `${base}n`,
    holders: `${base}wk`,
    wake: `${base}w`,
    events: `${base}ev`,
    limiter: `${base}lim`,
    progress: `${base}pg`,
    flows: `${base}f`,
    flowsWaiting: `${base}fw`,
    logs: `${base}lg`,
    config: `${KEY_PREFIX}:{${queueNameOfTag(tag)}}:config`,
    ready: `${base}wr`,
    wheel: `${base}wi`,
    wheelCount: `${base}wc`,
    wheelBuckets: `${base}wb`,
    schedules: `${base}schedules`,
    schedulePayloads: `${base}schedules:payloads`,
    scheduleLast: `${base}schedules:last`,
    scheduleWake: `${base}schedules:wake`,
  };
}

/**
 * The layout-1 keys of queue `name`, or of its partition `partition` when the queue has more than
 * one (tag `{name#i}`), for `delayq migrate`. `partitions` is always in the queue's own tag.
 */
export function legacyKeys(name: string, partition?: number): LegacyQueueKeys {
  assertQueueName(name);
  if (
    partition !== undefined &&
    (!Number.isInteger(partition) || partition < 0 || partition >= MAX_PARTITIONS)
  ) {
    throw new ValidationError(
      `partition must be a whole number from 0 to ${MAX_PARTITIONS - 1}, got ${String(partition)}`,
      'partition',
    );
  }
  const tag = partition === undefined ? name : `${name}#${partition}`;
  const base = `${KEY_PREFIX}:{${tag}}:`;
  return {
    schedule: `${base}schedule`,
    jobs: `${base}jobs`,
    meta: `${base}meta`,
    active: `${base}active`,
    leases: `${base}leases`,
    token: `${base}token`,
    dead: `${base}dead`,
    errors: `${base}errors`,
    completed: `${base}completed`,
    done: `${base}done`,
    events: `${base}events`,
    layout: `${base}layout`,
    partitions: partitionCountKey(name),
    limiter: `${base}limiter`,
    ready: `${base}ready`,
    wheel: `${base}wheel`,
    wheelCount: `${base}wheel-count`,
  };
}

/** Layout 1's wheel bucket LIST starting at `bucketStart` (epoch ms), for `delayq migrate`. */
export function legacyWheelBucketKey(keys: LegacyQueueKeys, bucketStart: number): string {
  return `${keys.wheel}:${bucketStart.toFixed(0)}`;
}

/**
 * The LIST of the wheel bucket starting at `bucketStart` (epoch ms, a multiple of the granularity):
 * the ids of the jobs due in [bucketStart, bucketStart + granularity), in the order they were put.
 */
export function wheelBucketKey(keys: QueueKeys, bucketStart: number): string {
  return `${keys.wheelBuckets}:${bucketStart.toFixed(0)}`;
}
