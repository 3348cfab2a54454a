/**
 * What a Queue's producer side is beyond the public API: its settled context and the settings its
 * adds share with the jobs its repeating schedules add. The schedule module, the Scheduler and the
 * test helpers take this, never the Queue's private fields.
 */
import type { ResolvedBackoff } from '../backoff.js';
import type { QueueContext } from '../definition/context.js';
import type { StandardSchemaV1 } from '../schema.js';

/** A Queue's producer settings. */
export interface Producer<T> {
  readonly context: QueueContext;
  readonly maxPayloadBytes: number;
  readonly schema: StandardSchemaV1<T, unknown> | undefined;
  readonly jobDefaults: { attempts: number; backoff?: ResolvedBackoff };
  /** Throws ClosedError once the queue is closed. */
  assertOpen(): void;
}

const producers = new WeakMap<object, Producer<unknown>>();

/** Called by the Queue constructor: `queue`'s producer is `producer`. */
export function registerProducer<T>(queue: object, producer: Producer<T>): void {
  producers.set(queue, producer);
}

/** The producer of `queue` (a Queue of this package). */
export function producerOf<T>(queue: object): Producer<T> {
  const producer = producers.get(queue);
  if (!producer) throw new TypeError('expected a delayq Queue');
  return producer as Producer<T>;
}
