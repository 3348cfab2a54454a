/**
 * One attempt's progress reports, coalesced so a chatty handler cannot flood Redis: at most one
 * write in flight and at most one per `minIntervalMs`; a value reported while a write waits
 * replaces the waiting one (the last value wins, and is written). Each report's promise settles
 * when a write carrying it, or a later value, is done.
 */
import { encodeProgress, PROGRESS_MAX_BYTES } from './progress-value.js';

/** The shortest time between two progress writes of one attempt: at most 10 writes per second. */
export const PROGRESS_MIN_INTERVAL_MS = 100;

/** Writes one value (JSON); rejects with LeaseLostError when the lease is gone. */
export type ProgressWrite = (json: string) => Promise<void>;

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

/** The progress of one attempt. */
export class ProgressReporter {
  private waiting: { json: string; waiters: Waiter[] } | null = null;
  private writing = false;
  private lastWriteAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  /** Set once the attempt ends: null when it ended normally, else why reports are refused. */
  private ended: { reason: Error | null } | null = null;

  constructor(
    private readonly jobId: string,
    private readonly write: ProgressWrite,
    private readonly minIntervalMs = PROGRESS_MIN_INTERVAL_MS,
    private readonly capBytes = PROGRESS_MAX_BYTES,
  ) {}

  /**
   * Report `value`; rejects with ValidationError or ProgressTooLargeError (nothing written), or
   * with LeaseLostError (a rejection that is never unhandled: see below).
   */
  report(value: unknown): Promise<void> {
    let json: string;
    try {
      json = encodeProgress(this.jobId, value, this.capBytes);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    if (this.ended) {
      // After the end nothing is written: the job's progress was deleted with its attempt.
      return this.ended.reason ? Promise.reject(this.ended.reason) : Promise.resolve();
    }
    const written = new Promise<void>((resolve, reject) => {
      if (this.waiting) {
        this.waiting.json = json;
        this.waiting.waiters.push({ resolve, reject });
      } else {
        this.waiting = { json, waiters: [{ resolve, reject }] };
      }
      this.schedule();
    });
    // A handler may report without awaiting (a hot loop): a refused write must not then crash the
    // process as an unhandled rejection. The loss is reported anyway (job.signal aborts, the
    // worker emits 'error'), and an awaiting caller still gets the rejection. A bad value, above,
    // is the caller's mistake and rejects unmarked.
    written.catch(() => {});
    return written;
  }

  /**
   * The attempt ended (settled, released or lost): a waiting value is not written. Its reports
   * resolve, or reject with `reason` (a lost lease). A write already sent is fenced by the script.
   */
  end(reason: Error | null): void {
    if (this.ended) return;
    this.ended = { reason };
    clearTimeout(this.timer);
    this.timer = undefined;
    const waiting = this.waiting;
    this.waiting = null;
    for (const w of waiting?.waiters ?? []) {
      if (reason) w.reject(reason);
      else w.resolve();
    }
  }

  private schedule(): void {
    if (this.writing || this.timer !== undefined || !this.waiting || this.ended) return;
    const wait = this.lastWriteAt + this.minIntervalMs - performance.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush();
      }, wait);
      this.timer.unref();
      return;
    }
    this.flush();
  }

  private flush(): void {
    const batch = this.waiting;
    if (!batch || this.ended) return;
    this.waiting = null;
    this.writing = true;
    this.lastWriteAt = performance.now();
    this.write(batch.json).then(
      () => {
        for (const w of batch.waiters) w.resolve();
        this.written();
      },
      (err: unknown) => {
        const error = err instanceof Error ? err : new Error(String(err));
        for (const w of batch.waiters) w.reject(error);
        this.written();
      },
    );
  }

  private written(): void {
    this.writing = false;
    this.schedule();
  }
}
