/** The events a Worker emits (src/worker.ts), and the attempt hooks that emit them. */
import type { EventEmitter } from 'node:events';
import type { ServerClock } from '../clock.js';
import type { Job } from '../job.js';
import { placementOf } from '../partition/index.js';
import type { AttemptHooks } from './attempt.js';
import type { CounterFlusher } from './counters.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { Reaper } from './reaper.js';

/** Events a Worker emits. */
export interface WorkerEvents<T, R = unknown> {
  /** The handler resolved and the ack was applied. */
  completed: [job: Job<T>, result: R];
  /** The handler failed; the job runs again at `retryAt`. */
  failed: [job: Job<T>, error: Error, retryAt: Date];
  /** The job is in the dead set. `job` is null when its payload could not be decoded. */
  dead: [job: Job<T> | null, error: Error, id: string];
  /**
   * The handler threw a SnoozeError: the job is due again at about `runAt` (`delayMs` after the
   * attempt ended, by the Redis clock), and the attempt did not count.
   */
  snoozed: [job: Job<T>, runAt: Date, delayMs: number];
  /**
   * This worker handed a job back to the queue, uncharged and due at once for another worker:
   * 'shutdown' when `close()` stopped it (a running job whose handler did not finish within the
   * timeout, or a claimed job not started yet), 'newer-version' when its payload version is newer
   * than this worker reads (due again after `newerVersionDelayMs`).
   */
  released: [id: string, reason: 'shutdown' | 'newer-version'];
  /** Something went wrong outside a handler (Redis errors, a lost lease, a refused late result). */
  error: [error: Error];
}

/** What the attempt hooks need from the worker. */
export interface EventHooksDeps<T, R> {
  /** The worker itself. */
  events: Pick<EventEmitter<WorkerEvents<T, R>>, 'emit'>;
  counters: Pick<CounterFlusher, 'count' | 'runTime'>;
  /** The server clock as this worker estimates it: run times and snoozes are on it. */
  clock: Pick<ServerClock, 'now' | 'observed'>;
  /** The queue's partition count: a job is counted in its own partition. */
  partitions: number;
  reaper: Pick<Reaper, 'finished'>;
  keeper: Pick<LeaseKeeper, 'untrack' | 'extendOne'>;
  report(err: unknown): void;
}

/** What each attempt tells the worker (AttemptHooks): its events, counts and lease renewals. */
export function attemptHooks<T, R>(deps: EventHooksDeps<T, R>): AttemptHooks<T> {
  const { events, counters, clock, reaper, keeper } = deps;
  /**
   * Count a finished attempt's run time, from its claim to now, both on the server's clock (as
   * this worker estimates it), in the partition it ran from: the run-time histogram every
   * process's /metrics reads from the counters.
   */
  const countRunTime = (job: Job<T>, partition = placementOf(job.id, job.group, deps.partitions)): void =>
    counters.runTime(clock.now() - job.claimedAt.getTime(), partition);
  return {
    completed: (job, result) => {
      const partition = placementOf(job.id, job.group, deps.partitions);
      counters.count('completed', 1, partition);
      countRunTime(job, partition);
      reaper.finished();
      // The handler's own value (R), or a batch's entry for this job.
      events.emit('completed', job, result as R);
    },
    failed: (job, error, retryAt) => {
      countRunTime(job);
      events.emit('failed', job, error, retryAt);
    },
    dead: (job, error, id) => {
      if (job) countRunTime(job);
      reaper.finished();
      events.emit('dead', job, error, id);
    },
    released: (id, reason, job, delayMs) => {
      if (reason === 'snooze') {
        // By the server clock (observed by the claim that took the job), else the local one.
        const now = clock.observed ? clock.now() : Date.now();
        if (job) events.emit('snoozed', job, new Date(Math.round(now) + delayMs), delayMs);
      } else {
        events.emit('released', id, reason);
      }
    },
    error: (err) => deps.report(err),
    // Stop renewing first: a renewal racing the ack or fail would find the lease gone and cry wolf.
    settling: (lease) => keeper.untrack(lease),
    extendLease: (lease, ms) => keeper.extendOne(lease, ms),
  };
}
