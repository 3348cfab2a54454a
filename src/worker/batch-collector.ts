/**
 * Gathers claimed jobs into the batch being formed. A batch goes to its handler as soon as it is
 * full, or when its earliest job has been due for `waitMs` by the server clock, whichever comes
 * first: a due job is never held longer than `waitMs` for others to join it. While a batch forms,
 * the claim loop asks for exactly the room left in it, so no job is claimed that the batch cannot
 * take; the jobs already in it hold their leases (renewed by the lease keeper like running ones).
 */

/** What the collector needs from the worker. */
export interface BatchCollectorDeps<A> {
  size: number;
  waitMs: number;
  /** The server clock's estimate now, ms. */
  now(): number;
  /** Hand a formed batch (never empty) to a handler. */
  dispatch(items: A[]): void;
}

/** The batch being formed, and the timer that sends it. */
export class BatchCollector<A> {
  private forming: A[] = [];
  /** When the forming batch must go, by the server clock: its earliest due time + waitMs. */
  private sendAt = Infinity;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: BatchCollectorDeps<A>) {}

  /** Jobs the forming batch can still take. */
  room(): number {
    return this.deps.size - this.forming.length;
  }

  /** Jobs in the forming batch. */
  get size(): number {
    return this.forming.length;
  }

  /**
   * Add a claimed job, due at `dueAt` (server clock). A full batch goes at once; otherwise the
   * timer is set for the earliest due time + waitMs. With waitMs 0 that is the next turn of the
   * event loop, after the rest of the claim's reply has joined.
   */
  add(item: A, dueAt: number): void {
    this.forming.push(item);
    if (this.forming.length >= this.deps.size) {
      this.send();
      return;
    }
    const sendAt = dueAt + this.deps.waitMs;
    if (sendAt >= this.sendAt) return;
    this.sendAt = sendAt;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.send(), Math.max(0, sendAt - this.deps.now()));
  }

  /** Send the forming batch now (no-op when empty). */
  send(): void {
    const items = this.take();
    if (items.length > 0) this.deps.dispatch(items);
  }

  /** Take the forming batch without sending it (at shutdown: its jobs are handed back). */
  take(): A[] {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.sendAt = Infinity;
    const items = this.forming;
    this.forming = [];
    return items;
  }
}
