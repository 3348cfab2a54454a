/**
 * Every Redis key and channel delayq uses is named here and nowhere else. All keys of one queue
 * share the hash tag `{queue}`, so every script touches a single slot and works on Redis Cluster.
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
};

/** The prefix of every delayq key. */
export const KEY_PREFIX = 'dq';

const MAX_QUEUE_NAME_LENGTH = 200;

/** Throws ValidationError unless `name` can be used as a queue name (and so inside a hash tag). */
export function assertQueueName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new ValidationError(`queue name must be a non-empty string, got ${JSON.stringify(name)}`);
  }
  if (name.length > MAX_QUEUE_NAME_LENGTH) {
    throw new ValidationError(`queue name is ${name.length} characters; keep it to ${MAX_QUEUE_NAME_LENGTH}`);
  }
  // Braces would end the hash tag early and scatter the queue's keys over slots.
  if (/[{}\s]/.test(name)) {
    throw new ValidationError(`queue name ${JSON.stringify(name)} may not contain braces or white space`);
  }
}

/** The keys of queue `name`. */
export function queueKeys(name: string): QueueKeys {
  assertQueueName(name);
  const base = `${KEY_PREFIX}:{${name}}:`;
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
    wake: `${base}wake`,
    schedules: `${base}schedules`,
    schedulePayloads: `${base}schedules:payloads`,
    scheduleLast: `${base}schedules:last`,
    scheduleWake: `${base}schedules:wake`,
    events: `${base}events`,
    limiter: `${base}limiter`,
  };
}
