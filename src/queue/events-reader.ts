/**
 * queue.events(): a queue's job events as they happen, read from one partition's stream `ev`:
 * failure events always, the routine ones (added, claimed, completed, ...) only when the queue was
 * created with `events: { maxLen, only: 'all' }`.
 */
import type { QueueContext } from '../definition/context.js';
import { ValidationError } from '../errors.js';
import { assertKnownOptions } from '../option-names.js';
import { parseEvent, type JobEvent } from '../events.js';

const EVENTS_READ_KEYS: ReadonlySet<string> = new Set(['from', 'signal', 'blockMs', 'partition']);

/** Options of queue.events(). */
export interface EventsReadOptions {
  from?: string;
  signal?: AbortSignal;
  blockMs?: number;
  partition?: number;
}

/**
 * The events of `ctx`'s queue after `opts.from`, on a connection of its own closed when the loop
 * ends; `isClosed` tells when the queue was closed meanwhile.
 */
export async function* readEvents(
  ctx: QueueContext,
  opts: EventsReadOptions,
  isClosed: () => boolean,
): AsyncGenerator<JobEvent> {
  assertKnownOptions(opts, EVENTS_READ_KEYS, 'events() option');
  // Each partition has its stream (ids of different streams do not order against each other, and
  // one XREAD of several keys is cross-slot on a Cluster): a partitioned queue reads one at a time.
  const P = ctx.partitions.length;
  const partition = opts.partition ?? (P === 1 ? 0 : undefined);
  const keys = partition === undefined ? undefined : ctx.partitions[partition];
  if (keys === undefined) {
    throw new ValidationError(
      `events of queue '${ctx.name}' (partitions: ${P}) need the option partition: 0 to ${P - 1}`,
    );
  }
  const { eventsCap } = await ctx.settle();
  if (eventsCap === 0) throw new ValidationError(`queue '${ctx.name}' was created with events: false`);
  const reader = ctx.client.duplicate();
  const stop = (): void => reader.disconnect();
  opts.signal?.addEventListener('abort', stop, { once: true });
  let from = opts.from ?? '$';
  try {
    if (from === '$') {
      // Resolve '$' to the last id now, so nothing written between two reads is missed.
      const last = (await reader.xrevrange(keys.events, '+', '-', 'COUNT', 1))[0];
      from = last ? last[0] : '0-0';
    }
    while (!isClosed() && !opts.signal?.aborted) {
      const reply = await reader.xread(
        'COUNT',
        500,
        'BLOCK',
        opts.blockMs ?? 1_000,
        'STREAMS',
        keys.events,
        from,
      );
      for (const [, entries] of reply ?? []) {
        for (const entry of entries) {
          if (opts.signal?.aborted) return;
          from = entry[0];
          yield parseEvent(entry);
        }
      }
    }
  } catch (err) {
    if (!opts.signal?.aborted && !isClosed()) throw err;
  } finally {
    opts.signal?.removeEventListener('abort', stop);
    reader.disconnect();
  }
}
