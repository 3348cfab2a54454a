/** The events a Worker emits (src/worker.ts), and the attempt hooks that emit them. */
import type { EventEmitter } from 'node:events';
import type { Job } from '../job.js';
import { placementOf } from '../partition/index.js';
import type { AttemptHooks } from './attempt.js';
import type { CounterFlusher } from './counters.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { Reaper } from './reaper.js';

/** Events a Worker emits. */
export interface WorkerEvents<T> {
  /** The handler resolved and the ack was applied. */
  completed: [job: Job<T>, result: unknown];
  /** The handler failed; the job runs again at `retryAt`. */
  failed: [job: Job<T>, error: Error, retryAt: Date];
  /** The job is in the dead set. `job` is null when its payload could not be decoded. */
  dead: [job: Job<T> | null, error: Error, id: string];
  /** Something went wrong outside a handler (Redis errors, a lost lease, a refused late result). */
  error: [error: Error];
}

/** What the attempt hooks need from the worker. */
export interface EventHooksDeps<T> {
  /** The worker itself. */
  events: Pick<EventEmitter<WorkerEvents<T>>, 'emit'>;
  counters: Pick<CounterFlusher, 'count'>;
  /** The queue's partition count: a completion is counted in its job's partition. */
  partitions: number;
  reaper: Pick<Reaper, 'finished'>;
  keeper: Pick<LeaseKeeper, 'untrack' | 'extendOne'>;
  report(err: unknown): void;
}

/** What each attempt tells the worker (AttemptHooks): its events, counts and lease renewals. */
export function attemptHooks<T>(deps: EventHooksDeps<T>): AttemptHooks<T> {
  const { events, counters, reaper, keeper } = deps;
  return {
    completed: (job, result) => {
      counters.count('completed', 1, placementOf(job.id, job.group, deps.partitions));
      reaper.finished();
      events.emit('completed', job, result);
    },
    failed: (job, error, retryAt) => events.emit('failed', job, error, retryAt),
    dead: (job, error, id) => {
      reaper.finished();
      events.emit('dead', job, error, id);
    },
    error: (err) => deps.report(err),
    // Stop renewing first: a renewal racing the ack or fail would find the lease gone and cry wolf.
    settling: (lease) => keeper.untrack(lease),
    extendLease: (lease, ms) => keeper.extendOne(lease, ms),
  };
}
