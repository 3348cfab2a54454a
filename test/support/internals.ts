/**
 * A Queue's keys, partitions and client for tests that look at Redis directly, through the one way
 * into a Queue's internals (src/definition/producer.ts).
 */
import type { QueueContext } from '../../src/definition/context.js';
import { producerOf } from '../../src/definition/producer.js';

/** The context of `queue` (a Queue): `keys`, `partitions`, `client`. */
export function internals(queue: object): QueueContext {
  return producerOf(queue).context;
}
