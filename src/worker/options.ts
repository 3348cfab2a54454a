/**
 * Worker options, resolved and validated once against named defaults. An error names the option.
 */
import type { GroupsOption } from '../definition/definition.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  DEFAULT_BACKOFF,
  validateBackoffSpec,
  type Backoff,
  type BackoffFunction,
  type ResolvedBackoff,
} from '../backoff.js';
import type { CodecOption } from '../codec/payload.js';
import { parseDuration, parseMs, type Duration } from '../duration.js';
import { assertKnownOptions, assertOptionObject } from '../option-names.js';
import { ValidationError } from '../errors.js';
import type { StrategyOption } from '../redis/capabilities.js';
import type { ConnectionOption } from '../redis/connection.js';
import type { Retention } from '../operations/trim.js';
import { resolveGranularity } from '../operations/wheel.js';
import { assertPartitions } from '../redis/keys.js';
import { assertSchema, type StandardSchemaV1 } from '../schema.js';
import { validateEventsOption, type EventsOption } from '../events.js';
import { resolveBatchOptions, type BatchOptions, type ResolvedBatch } from './batch-options.js';
import { consoleLogger, type Logger } from './logger.js';
import { resolveRetention } from './retention-options.js';

/** Upgrades from one payload version to the next: migrate[1] turns a version 1 payload into version 2. */
// `never` parameters accept any one-argument function, whatever payload type it declares.
export type Migrations = Readonly<Record<number, (payload: never) => unknown>>;

/** Options of a Worker. */
export interface WorkerOptions<T = unknown> {
  /** Validates each payload (after migration) before the handler sees it; failures go to the dead set. */
  schema?: StandardSchemaV1<unknown, T>;
  /** The payload version this worker's handler expects. Default 1. */
  version?: number;
  /** Step-by-step upgrades for payloads written with an older version. */
  migrate?: Migrations;
  /** At most `max` job starts per `per` window across all workers of the queue (enforced in the claim script). */
  limit?: { max: number; per: Duration };
  /** Keep about `maxLen` recent job events (default 10,000 failure events where the server has streams), or false. `only: 'all'` adds added, claimed, completed and the other routine events. */
  events?: EventsOption;
  /** How long a job written by a newer version than this worker knows waits before it is offered again. Default 1 min. */
  newerVersionDelay?: Duration;
  /** Where Redis is (see QueueOptions.connection). */
  connection?: ConnectionOption;
  /** Must match the producers' codec. Default 'json'. */
  codec?: CodecOption;
  /** Handlers running at once (a batch worker: batches in flight). Default 1. */
  concurrency?: number;
  /** How long a claim holds a job before others may take it back; renewed while the handler runs. Default 15 s. */
  leaseMs?: number;
  /** 'auto' (default) probes the server for 'zpopmin', else 'range'; or force one, or ask for 'wheel' (coarser timing, list commands). */
  strategy?: StrategyOption;
  /** With strategy 'wheel': the bucket width, which is the timing precision. Must match the producers'. Default 1000 ms. */
  wheel?: { granularityMs?: number };
  /** Backoff between attempts of jobs added without one (neither the add nor the queue's defaultJobOptions gave one): a spec or a function. Default exponential from 1 s, capped at 1 h, with jitter. */
  backoff?: Backoff;
  /** Longest sleep without looking at Redis, bounding the delay a lost wake-up can cause. Default 10 s. */
  maxSleepMs?: number;
  /** How often this worker reaps expired leases when it is too busy to claim. Default 5 s. */
  reapIntervalMs?: number;
  /**
   * How long completed jobs stay visible (`queue.get`, list 'completed') as a small completed
   * record: the last `count`, none older than `age` (no age: no age bound). While kept, an add of
   * the same id (such as one ioredis resends after a lost reply) writes nothing, and the record
   * holds the handler's return value, encoded by the codec (docs/DESIGN.md §1.3; none when count is 0).
   * Default: as rememberCompleted, without results.
   */
  keepCompleted?: { count: number; age?: Duration };
  /**
   * The completed-set bound when keepCompleted is not given: the last `count` ids, none older than
   * `age`. `false` keeps completed jobs about a second. Default 100,000 ids and 5 min.
   */
  rememberCompleted?: { count?: number; age?: Duration } | false;
  /**
   * Jobs claimed ahead of free slots, so the next ones are on their way while the current ones run.
   * They hold leases (renewed like running ones) and are handed back uncharged at close. Default
   * min(concurrency / 2, 25) rounded down: none at concurrency 1.
   */
  prefetch?: number;
  /** Cap of the dead set: at most `count` jobs, none older than `age`. Default 100,000 and 30 days. */
  dead?: { count?: number; age?: Duration };
  /** Start claiming at construction. Default true; otherwise call run(). */
  autorun?: boolean;
  /** This worker's id, recorded in every lease it takes. Default host:pid:random. */
  workerId?: string;
  /** Where warnings go. Default console. */
  logger?: Logger;
  /** The queue's partition count; must match the producers' (see QueueOptions.partitions). Default 1. */
  partitions?: number;
  /**
   * Jobs added with a `group`: at most `concurrency` of one group run at once across all workers
   * (default 1), and with `limit` a group starts at most `max` jobs per `per` on average (bursts
   * up to max). Groups with due jobs take turns. Part of the queue's definition: the first worker
   * that sets it records it, and a worker with other values gets ConfigMismatchError. Left out:
   * the recorded bounds (concurrency 1 when none are).
   */
  groups?: GroupsOption;
}

/**
 * Options of a batch worker: WorkerOptions and `batch`, which hands the handler up to `batch.size`
 * due jobs at once (`jobs: BatchJob<T>[]`), holding a due job at most `batch.waitMs` for others to
 * join (README, "Batches"). A separate type, so a one-job handler cannot be given `batch`. No
 * `prefetch`: the batch being formed is what a batch worker claims ahead.
 */
export interface BatchWorkerOptions<T = unknown> extends Omit<WorkerOptions<T>, 'prefetch'> {
  batch: BatchOptions;
}

/** Either kind, as the Worker's implementation takes them. */
export type AnyWorkerOptions<T = unknown> = WorkerOptions<T> & { batch?: BatchOptions };

/** Options after validation. */
export interface ResolvedWorkerOptions<T> {
  rate: { max: number; perMs: number };
  events: number | undefined;
  schema: StandardSchemaV1<unknown, T> | undefined;
  version: number;
  migrate: Migrations;
  newerVersionDelayMs: number;
  concurrency: number;
  /** Set for a batch worker. */
  batch: ResolvedBatch | undefined;
  leaseMs: number;
  strategy: StrategyOption;
  /** Bucket width of the wheel (used with strategy 'wheel'). */
  granularityMs: number;
  backoff: ResolvedBackoff | BackoffFunction;
  maxSleepMs: number;
  reapIntervalMs: number;
  /** The completed set's bound, as trim.lua takes it (a count or age of 0: no bound of that kind). */
  keepCompleted: Retention;
  /** Whether completed records hold the handler's return value: keepCompleted was given with count > 0. */
  keepResults: boolean;
  prefetch: number;
  deadMaxCount: number;
  deadMaxAgeMs: number;
  autorun: boolean;
  workerId: string;
  logger: Logger;
  partitions: number;
}

const KNOWN = new Set([
  'connection',
  'codec',
  'concurrency',
  'batch',
  'leaseMs',
  'strategy',
  'wheel',
  'backoff',
  'maxSleepMs',
  'reapIntervalMs',
  'keepCompleted',
  'rememberCompleted',
  'prefetch',
  'dead',
  'autorun',
  'workerId',
  'logger',
  'schema',
  'version',
  'migrate',
  'newerVersionDelay',
  'limit',
  'events',
  'partitions',
  'groups',
]);

/** Validate worker options; throws ValidationError naming the first wrong option. */
export function resolveWorkerOptions<T>(options: AnyWorkerOptions<T>): ResolvedWorkerOptions<T> {
  assertKnownOptions(options, KNOWN, 'worker option');
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 10_000) {
    throw new ValidationError(
      `concurrency must be a whole number from 1 to 10000, got ${String(concurrency)}`,
      'concurrency',
    );
  }
  const leaseMs = parseMs(options.leaseMs ?? 15_000, 'leaseMs');
  if (leaseMs < 100) throw new ValidationError(`leaseMs must be at least 100 ms, got ${leaseMs}`, 'leaseMs');
  const given = options.backoff ?? DEFAULT_BACKOFF;
  const backoff = typeof given === 'function' ? given : validateBackoffSpec(given, 'backoff');
  const maxSleepMs = parseMs(options.maxSleepMs ?? 10_000, 'maxSleepMs');
  const reapIntervalMs = parseMs(options.reapIntervalMs ?? 5_000, 'reapIntervalMs');
  if (maxSleepMs < 1) throw new ValidationError('maxSleepMs must be at least 1 ms', 'maxSleepMs');
  if (reapIntervalMs < 1) throw new ValidationError('reapIntervalMs must be at least 1 ms', 'reapIntervalMs');
  const { keepCompleted, keepResults } = resolveRetention(options);
  const batch = resolveBatchOptions(options.batch);
  // The batch being formed is a batch worker's claim-ahead: jobs beyond it would wait unbatched.
  if (batch !== undefined && options.prefetch !== undefined && options.prefetch !== 0) {
    throw new ValidationError(
      'prefetch does not apply to a batch worker (the batch being formed is what it claims ahead); remove prefetch or batch',
      'prefetch',
    );
  }
  const prefetch = options.prefetch ?? (batch ? 0 : Math.min(Math.floor(concurrency / 2), 25));
  if (!Number.isInteger(prefetch) || prefetch < 0 || prefetch > 10_000) {
    throw new ValidationError(
      `prefetch must be a whole number from 0 to 10000, got ${String(prefetch)}`,
      'prefetch',
    );
  }
  const deadMaxCount = options.dead?.count ?? 100_000;
  if (!Number.isInteger(deadMaxCount) || deadMaxCount < 1) {
    throw new ValidationError(
      `dead.count must be a whole number >= 1, got ${String(deadMaxCount)}`,
      'dead.count',
    );
  }
  const deadMaxAgeMs = parseDuration(options.dead?.age ?? '30d', 'dead.age');
  const strategy = options.strategy ?? 'auto';
  if (!['auto', 'zpopmin', 'range', 'wheel'].includes(strategy)) {
    throw new ValidationError(
      `strategy must be 'auto', 'zpopmin', 'range' or 'wheel', got ${JSON.stringify(strategy)}`,
      'strategy',
    );
  }
  const granularityMs = resolveGranularity(options.wheel);
  if (options.schema !== undefined) assertSchema(options.schema, 'schema');
  const version = options.version ?? 1;
  if (!Number.isInteger(version) || version < 1) {
    throw new ValidationError(
      `version must be a whole number >= 1, got ${String(options.version)}`,
      'version',
    );
  }
  const migrate = options.migrate ?? {};
  for (const [from, step] of Object.entries(migrate)) {
    if (!/^[1-9]\d*$/.test(from) || typeof step !== 'function') {
      throw new ValidationError(
        `migrate must map payload versions (1, 2, ...) to functions; migrate[${from}] is not one`,
        `migrate.${from}`,
      );
    }
  }
  const partitions = options.partitions ?? 1;
  assertPartitions(partitions);
  if (partitions > 1 && strategy === 'wheel') {
    throw new ValidationError(
      "partitions > 1 does not work with strategy 'wheel'; use 'auto', 'zpopmin' or 'range'",
      'partitions',
    );
  }
  // The claim script counts starts in its partition's limiter: P partitions would allow P times max.
  if (partitions > 1 && options.limit !== undefined) {
    throw new ValidationError('limit (a rate limit) does not work with partitions > 1', 'limit');
  }
  let rate = { max: 0, perMs: 0 };
  if (options.limit !== undefined) {
    assertOptionObject(options.limit, LIMIT_KEYS, 'limit');
    const { max, per } = options.limit;
    if (!Number.isInteger(max) || max < 1)
      throw new ValidationError(`limit.max must be a whole number >= 1, got ${String(max)}`, 'limit.max');
    const perMs = parseDuration(per, 'limit.per');
    if (perMs < 1) throw new ValidationError('limit.per must be at least 1 ms', 'limit.per');
    rate = { max, perMs };
  }
  return {
    rate,
    events: validateEventsOption(options.events),
    schema: options.schema,
    version,
    migrate,
    newerVersionDelayMs: parseDuration(options.newerVersionDelay ?? '1m', 'newerVersionDelay'),
    concurrency,
    batch,
    leaseMs,
    strategy,
    granularityMs,
    backoff,
    maxSleepMs,
    reapIntervalMs,
    keepCompleted,
    keepResults,
    prefetch,
    deadMaxCount,
    deadMaxAgeMs,
    autorun: options.autorun ?? true,
    workerId: options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    logger: options.logger ?? consoleLogger,
    partitions,
  };
}

const LIMIT_KEYS: ReadonlySet<string> = new Set(['max', 'per']);
