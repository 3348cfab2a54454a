/**
 * The one way into a Queue's internals: producerOf(queue). A Queue registers its producer here when
 * it is made: its context (keys, partitions, client, the settled definition) and the settings its
 * adds share with the jobs its repeating schedules add. The schedule module, the Scheduler, the
 * views (src/inspect/, src/metrics/), the test helpers and the tests take this, never a Queue's
 * fields: a Queue's public members are its API, and nothing internal is on it for a user to reach.
 * Here, below src/queue/ and everything that takes a Queue, so none of them imports the other.
 */
import type { ResolvedBackoff } from '../backoff.js';
import type { QueueContext } from './context.js';
import type { StandardSchemaV1 } from '../schema.js';

/** A Queue's producer settings. */
export interface Producer<T> {
  readonly context: QueueContext;
  readonly maxPayloadBytes: number;
  readonly schema: StandardSchemaV1<T, unknown> | undefined;
  readonly jobDefaults: { attempts: number; backoff?: ResolvedBackoff };
  /** Throws ClosedError once the queue is closed. */
  assertOpen(): void;
  /**
   * Throws ValidationError for a feature that needs the queue in one slot (`what` names it): the
   * schedule tick script writes its occurrence jobs into the slot of the schedule definitions.
   */
  assertUnpartitioned(what: string): void;
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
