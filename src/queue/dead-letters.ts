/** The dead set of a queue: jobs that used up their attempts or could not be read, each with its reason. */
import { ValidationError } from '../errors.js';
import { deadRemove } from '../operations/dead-remove.js';
import { deadRetry } from '../operations/dead-retry.js';
import type { JobInfo } from './info.js';
import type { Producer } from '../definition/producer.js';

/** Dead jobs moved back per script call of a retry of all. */
const DEAD_RETRY_BATCH = 500;

/** Operations on a queue's dead set (`queue.dead`). */
export class DeadLetters<T> {
  /** @internal Reached as `queue.dead`. */
  constructor(
    private readonly producer: Producer<T>,
    private readonly page: (page: { offset?: number; limit?: number }) => Promise<Array<JobInfo<T>>>,
  ) {}

  /** A page of dead jobs, most recent first. */
  list(page: { offset?: number; limit?: number } = {}): Promise<Array<JobInfo<T>>> {
    return this.page(page);
  }

  /**
   * Put the dead job `id` back in the schedule, due now, with attempts reset; returns 1, or 0 when
   * it is not dead. `retry('all')` is job 'all' only: when there is none, it throws and names
   * retryAll() (in 0.1 'all' meant every dead job, which left a job with that id unreachable).
   */
  async retry(id: string): Promise<number> {
    this.producer.assertOpen();
    const ctx = this.producer.context;
    const { eventsCap, layout } = await ctx.settle();
    // A grouped job is dead in its group's partition: found by id alone like get().
    const found = await ctx.findById(id, async (keys) => {
      const n = await deadRetry(ctx.client, keys, { id, batch: 1, eventsCap, layout });
      return n > 0 ? n : null;
    });
    const moved = found ?? 0;
    if (moved === 0 && id === 'all') {
      throw new ValidationError(
        "dead.retry('all') retries the job whose id is 'all', and no such job is dead; to retry every dead job call dead.retryAll()",
        [{ path: 'id', message: 'no dead job has this id; use dead.retryAll() for every dead job' }],
      );
    }
    return moved;
  }

  /** Put every dead job back in the schedule, due now, with attempts reset; returns how many moved. */
  async retryAll(opts: { onProgress?: (moved: number) => void } = {}): Promise<number> {
    this.producer.assertOpen();
    const ctx = this.producer.context;
    const { eventsCap, layout } = await ctx.settle();
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
    const removed = await ctx.findById(id, async (keys) =>
      (await deadRemove(ctx.client, keys, id)) ? true : null,
    );
    return removed === true;
  }
}
