/**
 * Every Redis key and channel delayq uses is named here and nowhere else. All keys of one queue
 * share the hash tag `{queue}`, so every script touches a single slot and works on Redis Cluster.
 * A queue with `partitions: P > 1` has P such sets of keys, tagged `{queue#0}` ... `{queue#P-1}`.
 */
import { ValidationError } from '../errors.js';

/** The keys of one queue; see docs/PROTOCOL.md for what each holds. */
// A type alias rather than an interface, so Object.values/entries keep the string type.
export type QueueKeys = {
  /** ZSET id -> due time (epoch ms) of every waiting job. */
  readonly schedule: string;
  /** HASH id -> encoded envelope. */
  readonly jobs: string;
  /** HASH id -> JSON bookkeeping: attempts started, max attempts, due time, last failed token. */
  readonly meta: string;
  /** ZSET id -> lease deadline (epoch ms) of every running job. */
  readonly active: string;
  /** HASH id -> "token|startMs|workerId" of every running job. */
  readonly leases: string;
  /** STRING counter the fencing tokens come from. */
  readonly token: string;
  /** ZSET id -> time the job died (epoch ms). */
  readonly dead: string;
  /** HASH id -> JSON of the job's last error. */
  readonly errors: string;
  /** ZSET id -> time the job completed; only filled when completed-job retention is on. */
  readonly completed: string;
  /**
   * ZSET id -> time the job completed, of recently completed jobs (bounded by count and age): an
   * add of one of these ids, such as one ioredis resends after a lost reply, writes nothing.
   */
  readonly done: string;
  /** Pub/sub channel: "the head of the schedule moved earlier", with the new due time. */
  readonly wake: string;
  /** HASH schedule name -> JSON definition of a repeating schedule (src/schedule/). */
  readonly schedules: string;
  /** HASH schedule name -> encoded payload template of the schedule's jobs. */
  readonly schedulePayloads: string;
  /** ZSET schedule name -> due time of the last occurrence added: never added again, and when to add the next. */
  readonly scheduleLast: string;
  /** Pub/sub channel: "a schedule's next step moved earlier", with that time, for sleeping schedulers. */
  readonly scheduleWake: string;
  /** STREAM of job events (added, claimed, completed, failed, dead, ...), capped. */
  readonly events: string;
  /** ZSET token -> start time of recent job starts, for the rate limit. */
  readonly limiter: string;
  /**
   * Legacy (before the config record): STRING the queue's layout, 'zset' or 'wheel:<granularity
   * ms>'. Read once, by config.lua, to build the config record of an older queue; never written.
   */
  readonly layout: string;
  /** LIST of job ids that are due, in due order (wheel layout): workers take from its head. */
  readonly ready: string;
  /** ZSET bucket start -> bucket end (epoch ms): the index of the wheel's non-empty buckets. */
  readonly wheel: string;
  /** STRING: how many jobs wait in the wheel's buckets (not counting `ready`). */
  readonly wheelCount: string;
  /**
   * STRING, present while the queue (or this partition) is paused; value: paused-at ms. Named `z`
   * as in layout 2 (docs/design/HOT-PATH.md §3.1), so it carries over unchanged.
   */
  readonly paused: string;
  /**
   * HASH id -> the running job's last progress value (JSON, size-capped), written by its lease
   * holder (progress.lua) and deleted when the attempt ends. Named `pg` as in layout 2
   * (docs/design/HOT-PATH.md §3.1), so it carries over unchanged.
   */
  readonly progress: string;
  /**
   * ZSET id -> cancelled at (epoch ms) of recently cancelled jobs, bounded by count and age like the
   * dead set, so get() can tell "cancelled" from "never existed". Named `x` as in layout 2
   * (docs/design/HOT-PATH.md §3.1), so it carries over unchanged.
   */
  readonly cancelled: string;
  /** HASH `n`: counter totals and per-second ring snapshots (stats.lua, HOT-PATH §7). */
  readonly counters: string;
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
 * which no valid queue name can have (assertQueueName refuses names ending in `#<digits>`).
 */
export function partitionKeys(name: string, partitions: number): QueueKeys[] {
  assertQueueName(name);
  assertPartitions(partitions);
  if (partitions === 1) return [keysWithTag(name)];
  return Array.from({ length: partitions }, (_, i) => keysWithTag(`${name}#${i}`));
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
    wake: `${base}wake`,
    schedules: `${base}schedules`,
    schedulePayloads: `${base}schedules:payloads`,
    scheduleLast: `${base}schedules:last`,
    scheduleWake: `${base}schedules:wake`,
    events: `${base}events`,
    limiter: `${base}limiter`,
    layout: `${base}layout`,
    ready: `${base}ready`,
    wheel: `${base}wheel`,
    wheelCount: `${base}wheel-count`,
    paused: `${base}z`,
    progress: `${base}pg`,
    cancelled: `${base}x`,
    counters: `${base}n`,
  };
}

/**
 * The LIST of the wheel bucket starting at `bucketStart` (epoch ms, a multiple of the granularity):
 * the ids of the jobs due in [bucketStart, bucketStart + granularity), in the order they were put.
 */
export function wheelBucketKey(keys: QueueKeys, bucketStart: number): string {
  return `${keys.wheel}:${bucketStart.toFixed(0)}`;
}
