/** The adapter of each system, by name. */
import type { Adapter, AdapterOptions, SystemName } from './adapter.js';
import { createBeeQueue } from './bee-queue.js';
import { createBullmq } from './bullmq.js';
import { createDelayq } from './delayq.js';

/** A producer-side adapter for `system` on `options.queue`. */
export function createAdapter(system: SystemName, options: AdapterOptions): Adapter {
  switch (system) {
    case 'delayq':
      return createDelayq(options);
    case 'bullmq':
      return createBullmq(options);
    case 'bee-queue':
      return createBeeQueue(options);
  }
}
