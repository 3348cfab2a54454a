/**
 * A background duty of a worker (reaper, lease keeper): runs `runOnce` every `intervalMs`, never
 * two at a time, reporting errors instead of dying. Tests call runOnce() directly.
 */

/** A periodic task with start/stop. */
export class PeriodicDuty {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(
    private readonly intervalMs: number,
    /** One round of the duty. */
    readonly runOnce: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Start ticking (the first round after one interval). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  /** Stop ticking and wait for a round in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .catch(this.onError)
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.intervalMs);
  }
}
