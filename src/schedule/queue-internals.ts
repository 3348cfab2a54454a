/**
 * What the schedule module and the test helpers need from a Queue beyond its public API: its
 * codec, payload version, size limit, schema and job defaults. Reading them here, rather than
 * asking the user to pass them a second time, keeps a scheduler's jobs encoded exactly as the
 * queue's own adds are.
 */
import type { ResolvedBackoff } from '../backoff.js';
import type { Codec } from '../codec/codec.js';
import type { Layout } from '../operations/wheel.js';
import type { Queue } from '../queue.js';
import type { StandardSchemaV1 } from '../schema.js';
import type { TickContext } from './tick.js';

/** A queue's encoding settings. */
export interface QueueInternals {
  codec: Codec;
  version: number;
  maxPayloadBytes: number;
  schema: StandardSchemaV1<unknown, unknown> | undefined;
  jobDefaults: { attempts: number; backoff?: ResolvedBackoff };
  /** The queue's events cap, once it knows the server (0: no events). */
  eventsCap: () => Promise<number>;
  /** Where the queue's waiting jobs live (the schedule ZSET, or the wheel), once it knows. */
  layout: () => Promise<Layout>;
}

/** The encoding settings of `queue` (private fields, read by name: both live in this package). */
export function internalsOf<T>(queue: Queue<T>): QueueInternals {
  return {
    codec: queue['codec'],
    version: queue['version'],
    maxPayloadBytes: queue['maxPayloadBytes'],
    schema: queue['schema'],
    jobDefaults: queue['jobDefaults'],
    eventsCap: async () => (await queue['ready']()).eventsCap,
    layout: async () => (await queue['ready']()).layout,
  };
}

/** What advancing a schedule of `queue` needs (see advanceSchedule), with a fresh template cache. */
export function tickContextOf<T>(queue: Queue<T>): TickContext {
  const { codec, maxPayloadBytes, eventsCap, layout } = internalsOf(queue);
  return {
    client: queue.client,
    keys: queue.keys,
    codec,
    maxPayloadBytes,
    eventsCap,
    layout,
    queue: queue.name,
    templates: new Map(),
  };
}
