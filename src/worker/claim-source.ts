/**
 * Where a worker's claim loop gets due jobs from. One interface, one implementation per layout:
 * the schedule ZSET (strategies zpopmin and range), the time wheel, and a partitioned queue's set
 * of schedules. The claim loop asks a source for jobs and the next due time and holds no strategy
 * branches; the choice is made once, in claimSourceFor() (sources.ts).
 */
import type { Sleeper, ServerClock } from '../clock.js';
import type { ClaimOutput } from '../operations/claim.js';
import type { Layout } from '../operations/wheel.js';
import type { Strategy } from '../redis/capabilities.js';
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';

/** A supply of due jobs. */
export interface ClaimSource {
  /**
   * Lease up to `limit` due jobs; the output says when the next job or lease expiry is due.
   * `ahead`: also jobs due within CLAIM_AHEAD_MS, where the source can (not the wheel); the
   * caller starts none before its due time.
   */
  claim(limit: number, ahead?: boolean): Promise<ClaimOutput>;
  /**
   * Wait up to `ms` for work; ends early on the sleeper's wakeNow() (and on whatever the source
   * watches). `approach`: `ms` ends at a due time, so the sleeper may finish it on its spin.
   */
  pause(ms: number, approach?: boolean): Promise<void>;
  /** A wake-up from `partition` (null: unknown, such as a reconnect); its head is due at `due` (null: unknown). */
  woken(partition: number | null, due: number | null): void;
  /** Open what the source needs before the first claim. */
  start(): Promise<void>;
  /** Close it; a pause in progress ends. */
  stop(): Promise<void>;
}

/** What a source is built from. */
export interface ClaimSourceContext {
  client: RedisClient;
  /** The keys of each partition (one entry unless the queue is partitioned). */
  partitions: readonly QueueKeys[];
  strategy: Strategy;
  layout: Layout;
  /**
   * Claim up to `limit` jobs of partition `partition` through its exchange: the call also carries
   * the acks queued for that partition (WorkerStorage.claim).
   */
  claim(partition: number, limit: number, ahead?: boolean): Promise<ClaimOutput>;
  /** The wheel: the bucket starts to pass with `partition`'s calls from now on. */
  setBuckets(partition: number, starts: readonly number[]): void;
  clock: ServerClock;
  sleeper: Sleeper;
  maxSleepMs: number;
  /** The wheel's blocking wait for the ready list (null: the server has neither BLMOVE nor BRPOPLPUSH). */
  blockingMove: 'blmove' | 'brpoplpush' | null;
  /** Errors that do not fail a claim (one partition of several, the wheel's blocking connection). */
  onError(err: Error): void;
}
