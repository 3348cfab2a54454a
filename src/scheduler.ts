/**
 * The Scheduler: the duty that keeps each repeating schedule of one queue one occurrence ahead.
 * When a schedule's last added occurrence becomes due, it adds the next one, as an ordinary
 * delayed job, so workers start it at its time to the millisecond. Run it in as many processes as
 * you like: every step is a compare-and-set on the schedule's high-water mark in one script, so
 * each occurrence is added once however many schedulers race.
 */
import { EventEmitter } from 'node:events';
import { ServerClock, Sleeper } from './clock.js';
import { producerOf } from './definition/producer.js';
import { parseMs } from './duration.js';
import { ValidationError } from './errors.js';
import { assertKnownOptions } from './option-names.js';
import type { Queue } from './queue.js';
import { WakeSubscriber } from './redis/wake-subscriber.js';
import { readSchedules } from './operations/schedule-read.js';
import { advanceSchedule, tickContextOf, type AddedOccurrence, type TickContext } from './schedule/tick.js';

const SCHEDULER_OPTIONS: ReadonlySet<string> = new Set(['maxSleepMs', 'batch']);

/** Options of a Scheduler. */
export interface SchedulerOptions {
  /** Longest sleep without looking at Redis, bounding the delay a lost wake-up can cause. Default 5 s. */
  maxSleepMs?: number;
  /** Schedules advanced per round. Default 100. */
  batch?: number;
}

/** Events a Scheduler emits. */
export interface SchedulerEvents {
  /** This scheduler added an occurrence's job (created false: its id was taken, nothing written). */
  added: [occurrence: AddedOccurrence];
  /** Something went wrong (Redis unreachable, a payload template that no longer decodes, ...). */
  error: [error: Error];
}

/** Counters since start, for monitoring and tests. */
export interface SchedulerStats {
  /** Rounds run. */
  rounds: number;
  /** Occurrence jobs this scheduler added. */
  added: number;
  /** Steps refused because another scheduler (or a change of definition) got there first. */
  lost: number;
}

/** Pause after a failed round, so a broken server or schedule is not hammered. */
const ERROR_PAUSE_MS = 1_000;

/** Adds the occurrences of a queue's repeating schedules; safe to run in any number of processes. */
export class Scheduler extends EventEmitter<SchedulerEvents> {
  /** Counters since construction. */
  readonly stats: SchedulerStats = { rounds: 0, added: 0, lost: 0 };
  private readonly maxSleepMs: number;
  private readonly batch: number;
  private readonly context: TickContext;
  private readonly clock = new ServerClock();
  private readonly sleeper = new Sleeper();
  private readonly subscriber: WakeSubscriber;
  private running: Promise<void> | undefined;
  private loopDone: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly queue: Queue<unknown>,
    options: SchedulerOptions = {},
  ) {
    super();
    const producer = producerOf(queue);
    producer.assertUnpartitioned('repeating schedules (a Scheduler)');
    assertKnownOptions(options, SCHEDULER_OPTIONS, 'scheduler option');
    this.maxSleepMs = parseMs(options.maxSleepMs ?? 5_000, 'maxSleepMs');
    if (this.maxSleepMs < 1) throw new ValidationError('maxSleepMs must be at least 1 ms', 'maxSleepMs');
    this.batch = options.batch ?? 100;
    if (!Number.isInteger(this.batch) || this.batch < 1 || this.batch > 10_000) {
      throw new ValidationError(
        `batch must be a whole number from 1 to 10000, got ${String(options.batch)}`,
        'batch',
      );
    }
    this.context = tickContextOf(queue);
    this.subscriber = new WakeSubscriber(
      producer.context.client,
      producer.context.keys.scheduleWake,
      (due) => {
        if (due === null) this.sleeper.wakeNow();
        else this.sleeper.wakeWithin(due - this.clock.now());
      },
      (err) => this.report(err),
    );
  }

  /** Subscribe and start the loop; resolves once running. Stop it with stop() before closing the queue. */
  start(): Promise<void> {
    this.running ??= (async () => {
      await this.subscriber.start();
      if (this.stopped) return;
      this.loopDone = this.loop();
    })();
    return this.running;
  }

  /** Stop after the round in progress and unsubscribe. The queue stays open. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.sleeper.wakeNow();
    await this.running?.catch(() => {});
    await this.loopDone;
    await this.subscriber.stop();
  }

  /**
   * One round: advance every schedule whose last occurrence is due. Returns how long to sleep
   * before the next round (0: go on at once).
   */
  async runOnce(): Promise<number> {
    this.stats.rounds++;
    const read = await readSchedules(this.context.queue.client, this.context.queue.keys, {
      mode: 'due',
      limit: this.batch,
    });
    this.clock.observe(read.now);
    let failed = false;
    await Promise.all(
      read.entries.map(async (entry) => {
        try {
          const out = await advanceSchedule(this.context, entry, read.now);
          if (out.outcome === 'stale') this.stats.lost++;
          for (const occurrence of out.added) {
            if (occurrence.created) this.stats.added++;
            else {
              this.report(
                new Error(
                  `schedule '${occurrence.schedule}': job id ${occurrence.id} was taken by a job the scheduler did not add, so that occurrence was skipped; ids of the form <schedule>@<epoch ms> belong to schedules`,
                ),
              );
            }
            this.emit('added', occurrence);
          }
        } catch (err) {
          failed = true;
          this.report(err);
        }
      }),
    );
    if (failed) return ERROR_PAUSE_MS;
    if (read.entries.length > 0) return 0;
    if (read.head < 0) return this.maxSleepMs;
    // At least 1 ms: nothing was due, so head is ahead of now, but a spin must never be possible.
    return Math.min(this.maxSleepMs, Math.max(1, read.head - read.now));
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      let sleepMs: number;
      try {
        sleepMs = await this.runOnce();
      } catch (err) {
        if (this.stopped) break;
        this.report(err);
        sleepMs = ERROR_PAUSE_MS;
      }
      if (sleepMs > 0 && !this.stopped) await this.sleeper.sleep(sleepMs);
    }
  }

  private report(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err));
    if (this.listenerCount('error') > 0) this.emit('error', error);
    else console.error(`delayq scheduler '${this.queue.name}': ${error.message}`);
  }
}
