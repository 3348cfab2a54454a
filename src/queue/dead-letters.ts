/** The dead set of a queue: jobs that used up their attempts or could not be read, each with its reason. */
import { deadRemove, deadRetry } from '../operations/manage.js';
import type { JobInfo } from './info.js';
import type { Producer } from './producer.js';

/** Dead jobs moved back per script call of a retry of all. */
const DEAD_RETRY_BATCH = 500;

/** Operations on a queue's dead set (`queue.dead`). */
export class DeadLetters<T> {
  constructor(
    private readonly producer: Producer<T>,
    private readonly page: (page: { offset?: number; limit?: number }) => Promise<Array<JobInfo<T>>>,
  ) {}

  /** A page of dead jobs, most recent first. */
  list(page: { offset?: number; limit?: number } = {}): Promise<Array<JobInfo<T>>> {
    return this.page(page);
  }

  /** Put one dead job (or every one, with id 'all') back in the schedule, due now, with attempts reset; returns how many moved. */
  async retry(id: string, opts: { onProgress?: (moved: number) => void } = {}): Promise<number> {
    this.producer.assertOpen();
    const ctx = this.producer.context;
    const { eventsCap, layout } = await ctx.settle();
    if (id !== 'all') return deadRetry(ctx.client, ctx.keysOf(id), { id, batch: 1, eventsCap, layout });
    let total = 0;
    for (const keys of ctx.partitions) {
      for (;;) {
        const moved = await deadRetry(ctx.client, keys, {
          id: null,
          batch: DEAD_RETRY_BATCH,
          eventsCap,
          layout,
        });
        total += moved;
        opts.onProgress?.(total);
        if (moved < DEAD_RETRY_BATCH) break;
      }
    }
    return total;
  }

  /** Delete a dead job for good; false when it is not dead. */
  async remove(id: string): Promise<boolean> {
    this.producer.assertOpen();
    const ctx = this.producer.context;
    await ctx.settle();
    return deadRemove(ctx.client, ctx.keysOf(id), id);
  }
}
