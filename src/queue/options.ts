/** The options of a Queue, and the producer settings resolved from them once. */
import type { BackoffSpec, ResolvedBackoff } from '../backoff.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, type CodecOption } from '../codec/payload.js';
import { ValidationError } from '../errors.js';
import type { EventsOption } from '../events.js';
import { resolveAddOptions } from '../job-options.js';
import { assertKnownOptions } from '../option-names.js';
import type { StrategyOption } from '../redis/capabilities.js';
import type { ConnectionOption } from '../redis/connection.js';
import { assertSchema, type StandardSchemaV1 } from '../schema.js';

/** Options of a Queue. */
export interface QueueOptions<T = unknown> {
  /** Validates each payload at add (Standard Schema: zod, valibot, ...); a failure throws ValidationError and writes nothing. */
  schema?: StandardSchemaV1<T, unknown>;
  /** Where Redis is: a URL, ioredis options, or an ioredis instance (left open by close()). Default REDIS_URL or 127.0.0.1:6379. */
  connection?: ConnectionOption;
  /**
   * How envelopes are encoded; must match the queue's recorded codec (else ConfigMismatchError).
   * Default: the recorded one when built in, 'json' for a new queue.
   */
  codec?: CodecOption;
  /** The payload schema version written into each job. Default 1. */
  version?: number;
  /** Largest encoded job accepted by add. Default 1 MiB. */
  maxPayloadBytes?: number;
  /**
   * Keep about `maxLen` recent job events in a stream, or false. Failure events only by default;
   * `only: 'all'` adds added, claimed, completed and the other routine events. Must match the
   * recorded setting (else ConfigMismatchError). Default: the recorded one; for a new queue
   * 10,000 failure events where the server has streams.
   */
  events?: EventsOption;
  /** Defaults for add options. */
  defaultJobOptions?: { attempts?: number; backoff?: BackoffSpec };
  /**
   * Where jobs are written, which must match the workers': 'zpopmin' and 'range' share the schedule
   * ZSET layout, 'wheel' writes into the wheel's bucket lists. Default 'auto': the layout the queue
   * has recorded, else the schedule ZSET. A Queue whose explicit strategy does not match the
   * queue's layout throws LayoutMismatchError.
   */
  strategy?: StrategyOption;
  /** With strategy 'wheel': the bucket width; must match the workers'. Default 1000 ms. */
  wheel?: { granularityMs?: number };
  /**
   * Spread the queue over this many hash tags (and so over several Cluster masters); a job's
   * partition follows from its id. Must match the workers' and the count recorded at the queue's
   * first use (else PartitionMismatchError); on a queue grown by queue.repartition(), any count
   * from the one before its first re-partition up to the recorded one adopts the recorded one.
   * Not with strategy 'wheel' nor repeating schedules. Default 1.
   */
  partitions?: number;
}

const DEFAULT_ATTEMPTS = 3;
const QUEUE_OPTIONS: ReadonlySet<string> = new Set([
  'schema',
  'connection',
  'codec',
  'version',
  'maxPayloadBytes',
  'events',
  'defaultJobOptions',
  'strategy',
  'wheel',
  'partitions',
]);
const DEFAULT_JOB_OPTIONS: ReadonlySet<string> = new Set(['attempts', 'backoff']);

/** Throws ValidationError naming the first option of `options` a Queue does not know. */
export function assertQueueOptionNames(options: object): void {
  assertKnownOptions(options, QUEUE_OPTIONS, 'queue option');
  const { defaultJobOptions } = options as { defaultJobOptions?: unknown };
  if (typeof defaultJobOptions === 'object' && defaultJobOptions !== null) {
    assertKnownOptions(defaultJobOptions, DEFAULT_JOB_OPTIONS, 'defaultJobOptions option');
  }
}

/** The producer-only settings of `options`, validated; throws ValidationError naming the option. */
export function resolveProducerOptions<T>(options: QueueOptions<T>): {
  schema: StandardSchemaV1<T, unknown> | undefined;
  maxPayloadBytes: number;
  jobDefaults: { attempts: number; backoff?: ResolvedBackoff };
} {
  if (options.schema !== undefined) assertSchema(options.schema, 'schema');
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  if (!Number.isInteger(maxPayloadBytes) || maxPayloadBytes < 1) {
    throw new ValidationError(
      `maxPayloadBytes must be a whole number >= 1, got ${String(options.maxPayloadBytes)}`,
      'maxPayloadBytes',
    );
  }
  const given = options.defaultJobOptions;
  const attempts = resolveAddOptions(given?.attempts !== undefined ? { attempts: given.attempts } : {}, {
    attempts: DEFAULT_ATTEMPTS,
  }).attempts;
  const jobDefaults: { attempts: number; backoff?: ResolvedBackoff } = { attempts };
  if (given?.backoff)
    jobDefaults.backoff = resolveAddOptions({ backoff: given.backoff }, jobDefaults).backoff!;
  return { schema: options.schema, maxPayloadBytes, jobDefaults };
}
