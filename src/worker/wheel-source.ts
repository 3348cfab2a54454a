/**
 * The time wheel as a claim source: each claim (through the worker's exchange, with the acks it
 * carries) also promotes the due buckets the previous claim named, and the pause between claims
 * also ends the moment the ready list holds a job (see ready-waiter.ts), so a job promoted by
 * another worker starts without waiting for a timer.
 */
import type { ClaimOutput } from '../operations/claim.js';
import type { ClaimSource, ClaimSourceContext } from './claim-source.js';
import { ReadyWaiter } from './ready-waiter.js';

/** Claims from the wheel of an unpartitioned queue. */
export class WheelSource implements ClaimSource {
  /** The starts of the buckets to pass to the next claim, as the last claim reported them. */
  private head: number[] = [];
  /** Jobs left in ready after the last claim (the rate limit may hold them back). */
  private readyLeft = 0;
  /** The last claim found the queue paused: ready may hold jobs that must not start until the resume. */
  private paused = false;
  private readonly waiter: ReadyWaiter | undefined;

  constructor(private readonly ctx: ClaimSourceContext) {
    const keys = ctx.partitions[0]!;
    if (ctx.blockingMove !== null) {
      this.waiter = new ReadyWaiter(ctx.client, keys.ready, ctx.blockingMove, (err) => ctx.onError(err));
    }
  }

  async claim(limit: number): Promise<ClaimOutput> {
    this.ctx.setBuckets(0, this.head);
    const out = await this.ctx.claim(0, limit);
    this.paused = out.paused;
    if (out.wheel) {
      this.head = out.wheel.head;
      this.readyLeft = out.wheel.readyLeft;
      // Due buckets were left because this call did not pass them: claim again at once, with them.
      if (out.wheel.dueLeft) out.nextAt = out.now;
    }
    return out;
  }

  /**
   * Sleep, and also end the sleep when the ready list holds a job (a promotion by another worker,
   * a job added due now, a reaped or released job), unless ready still holds jobs this worker may
   * not start yet (the rate limit, or a paused queue: only the resume's wake message ends that
   * sleep), which would end it at once.
   */
  async pause(ms: number, approach?: boolean): Promise<void> {
    const { sleeper } = this.ctx;
    const waiter = this.waiter;
    if (!waiter || this.readyLeft > 0 || this.paused) return sleeper.sleep(ms, approach);
    const sleep = sleeper.sleep(ms, approach);
    const blocked = waiter.wait(ms).then((ready) => {
      if (ready) sleeper.interrupt();
    });
    await sleep;
    await waiter.interrupt();
    await blocked;
  }

  woken(): void {
    // The sleeper's wake-up is all there is to do.
  }

  async start(): Promise<void> {
    await this.waiter?.start();
  }

  async stop(): Promise<void> {
    await this.waiter?.stop();
  }
}
