/**
 * A queue's definition: what every client of one queue must agree on (partitions, layout, codec,
 * events) and the payload version it writes or knows, resolved and validated once from a client's
 * options. QueueContext (./context.ts) checks it against the record in Redis.
 */
import type { Codec } from '../codec/codec.js';
import { resolveCodec, type CodecOption } from '../codec/payload.js';
import { ValidationError } from '../errors.js';
import { validateEventsOption, type EventsOption } from '../events.js';
import type { StrategyOption } from '../redis/capabilities.js';
import { assertPartitions, assertQueueName } from '../redis/keys.js';
import { resolveGranularity } from '../operations/wheel.js';

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
  return {
    name,
    partitions,
    strategy,
    granularityMs: resolveGranularity(options.wheel),
    codec: options.codec === undefined ? null : resolveCodec(options.codec),
    events: validateEventsOption(options.events),
    version,
  };
}

/** The events cap as a person would write the option. */
export function describeEvents(cap: number): string {
  if (cap === 0) return 'false';
  return cap > 0 ? `{ maxLen: ${cap}, only: 'all' }` : `{ maxLen: ${-cap} }`;
}
