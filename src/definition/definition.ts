/**
 * A queue's definition: what every client of one queue must agree on (partitions, layout, codec,
 * events) and the payload version it writes or knows, resolved and validated once from a client's
 * options. QueueContext (./context.ts) checks it against the record in Redis.
 */
import type { Codec } from '../codec/codec.js';
import { resolveCodec, type CodecOption } from '../codec/payload.js';
import { describe, parseDuration, type Duration } from '../duration.js';
import { ValidationError } from '../errors.js';
import { assertKnownOptions } from '../option-names.js';
import { validateEventsOption, type EventsOption } from '../events.js';
import type { StrategyOption } from '../redis/capabilities.js';
import { assertPartitions, assertQueueName } from '../redis/keys.js';
import { resolveGranularity } from '../operations/wheel.js';
import type { GroupBounds } from '../operations/config-record.js';

/** The options a definition is resolved from (the shared part of QueueOptions and WorkerOptions). */
export interface DefinitionOptions {
  partitions?: number;
  strategy?: StrategyOption;
  wheel?: { granularityMs?: number };
  /** Left out: the recorded codec when it is built in ('json' for a new queue). */
  codec?: CodecOption;
  /** Left out: the recorded setting (the server's default for a new queue). */
  events?: EventsOption;
  version?: number;
  /**
   * Group bounds (Worker option): recorded by the first worker that sets them, then live (changed
   * with queue.configure(); a client with another value adopts the record: ./settings.ts).
   */
  groups?: GroupsOption;
}

/** The Worker option `groups` (issue 16). */
export interface GroupsOption {
  /** Running jobs per group, across all workers of the queue. Default 1. */
  concurrency?: number;
  /** At most `max` starts per `per` per group, on average (bursts up to max). */
  limit?: { max: number; per: Duration };
}

/** What one client brings to a queue; `null` and 'auto' adopt what the queue has recorded. */
export interface QueueDefinition {
  readonly name: string;
  readonly partitions: number;
  readonly strategy: StrategyOption;
  /** The wheel's bucket width; only compared when `strategy` is 'wheel'. */
  readonly granularityMs: number;
  readonly codec: Codec | null;
  /** The events cap as the scripts take it (0 off, N, -N failures only), or undefined: adopt. */
  readonly events: number | undefined;
  /** The payload version this client writes (Queue) or knows (Worker). */
  readonly version: number;
  /** The group bounds this client sets, or null: adopt the recorded ones. */
  readonly groups: GroupBounds | null;
}

const STRATEGIES: readonly StrategyOption[] = ['auto', 'zpopmin', 'range', 'wheel'];

/** Validate `options` into the definition of queue `name`; throws ValidationError naming the option. */
export function defineQueue(name: string, options: DefinitionOptions = {}): QueueDefinition {
  assertQueueName(name);
  const partitions = options.partitions ?? 1;
  assertPartitions(partitions);
  const strategy = options.strategy ?? 'auto';
  if (!STRATEGIES.includes(strategy)) {
    throw new ValidationError(
      `strategy must be 'auto', 'zpopmin', 'range' or 'wheel', got ${JSON.stringify(options.strategy)}`,
      'strategy',
    );
  }
  // A wheel worker waits on one ready list; it has no way to wait on several.
  if (partitions > 1 && strategy === 'wheel') {
    throw new ValidationError(
      "partitions > 1 does not work with strategy 'wheel'; use 'auto', 'zpopmin' or 'range'",
      'partitions',
    );
  }
  const version = options.version ?? 1;
  if (!Number.isInteger(version) || version < 1) {
    throw new ValidationError(
      `version must be a whole number >= 1, got ${String(options.version)}`,
      'version',
    );
  }
  const groups = options.groups === undefined ? null : resolveGroups(options.groups);
  if (groups && strategy === 'wheel') {
    throw new ValidationError(
      "groups are not supported with strategy 'wheel' (its buckets are FIFO lists, with no per-group order or bound); use 'auto', 'zpopmin' or 'range'",
      'groups',
    );
  }
  return {
    name,
    partitions,
    groups,
    strategy,
    granularityMs: resolveGranularity(options.wheel),
    codec: options.codec === undefined ? null : resolveCodec(options.codec),
    events: validateEventsOption(options.events),
    version,
  };
}

const GROUPS_KEYS: ReadonlySet<string> = new Set(['concurrency', 'limit']);

/** Validate the `groups` option; throws ValidationError naming the wrong part. */
export function resolveGroups(value: unknown): GroupBounds {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError(`groups must be { concurrency?, limit? }, got ${describe(value)}`, 'groups');
  }
  const o = value as Record<string, unknown>;
  assertKnownOptions(o, GROUPS_KEYS, 'groups key', { path: 'groups' });
  const concurrency = o['concurrency'] ?? 1;
  if (
    typeof concurrency !== 'number' ||
    !Number.isInteger(concurrency) ||
    concurrency < 1 ||
    concurrency > MAX_GROUP_CONCURRENCY
  ) {
    throw new ValidationError(
      `groups.concurrency must be a whole number from 1 to ${MAX_GROUP_CONCURRENCY}, got ${describe(concurrency)}`,
      'groups.concurrency',
    );
  }
  const limit = o['limit'];
  if (limit === undefined) return { concurrency, limit: null };
  if (typeof limit !== 'object' || limit === null) {
    throw new ValidationError(`groups.limit must be { max, per }, got ${describe(limit)}`, 'groups.limit');
  }
  const { max, per } = limit as { max?: unknown; per?: unknown };
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) {
    throw new ValidationError(
      `groups.limit.max must be a whole number >= 1, got ${describe(max)}`,
      'groups.limit.max',
    );
  }
  const perMs = parseDuration(per, 'groups.limit.per');
  if (perMs <= 0)
    throw new ValidationError(
      `groups.limit.per must be more than 0 ms, got ${describe(per)}`,
      'groups.limit.per',
    );
  return { concurrency, limit: { max, perMs } };
}

// A running count is an integer in a hash field; a bound past this is no bound.
const MAX_GROUP_CONCURRENCY = 1_000_000;

/** The group bounds as config.lua records them. */
export function groupsRecordValues(groups: GroupBounds | null): { concurrency: string; limit: string } {
  if (!groups) return { concurrency: '', limit: '' };
  return {
    concurrency: String(groups.concurrency),
    limit: groups.limit ? `${groups.limit.max}/${groups.limit.perMs}` : 'none',
  };
}
