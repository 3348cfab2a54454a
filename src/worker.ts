/**
 * The consumer: claims due jobs, runs the handler, and acks or fails them under a fenced lease.
 * The parts are composed here, and only here: the claim loop over a claim source, the lease
 * keeper, the reaper (and trim), the wake subscriber, the counters, and the storage (one exchange
 * per partition: acks ride on the next claim call) that each attempt's state machine settles its
 * fate through.
 */
import { EventEmitter } from 'node:events';
import { ServerClock, Sleeper } from './clock.js';
import type { Codec } from './codec/codec.js';
import { resolveCodec } from './codec/payload.js';
import { ClosedError, DelayqError, LeaseLostError } from './errors.js';
import type { Job } from './job.js';
import { groupOfLease, tokenOfLease } from './members/lease.js';
import { DEFAULT_GROUP_CONCURRENCY, type ClaimedJob, type UnreadableJob } from './operations/claim.js';
import { flushCounts } from './operations/stats.js';
import { partitionOfMember, placementOf } from './partition/index.js';
import { NEW_JOB_HEADER } from './record/index.js';
import { blockingMove, hasZmscore, type Strategy } from './redis/capabilities.js';
import { closeConnection, openConnection, type Connection } from './redis/connection.js';
import type { QueueKeys } from './redis/keys.js';
import { QueueContext } from './definition/context.js';
import { defineQueue } from './definition/definition.js';
import { warnIfEvicting } from './redis/eviction.js';
import { WakeSubscriber } from './redis/wake-subscriber.js';
import { loadTracing, type Tracing } from './tracing.js';
import { Attempt, type AttemptHooks } from './worker/attempt.js';
import { APPROACH_SPIN_MS, ClaimLoop } from './worker/claim-loop.js';
import { CLAIM_AHEAD_MS, StartGate } from './worker/start-gate.js';
import type { ClaimSource } from './worker/claim-source.js';
import { LeaseKeeper, type HeldLease } from './worker/lease-keeper.js';
import {
  resolveWorkerOptions,
  type AnyWorkerOptions,
  type BatchWorkerOptions,
  type ResolvedWorkerOptions,
  type WorkerOptions,
} from './worker/options.js';
import { BatchCollector } from './worker/batch-collector.js';
import { runBatch, type BatchHandler } from './worker/run-batch.js';
import { Reaper } from './worker/reaper.js';
import { RetryPolicy } from './worker/retry-policy.js';
import { runAttempt, toError, type AttemptFlight, type Handler, type RunDeps } from './worker/run-attempt.js';
import { Slots } from './worker/slots.js';
import { claimSourceFor } from './worker/sources.js';
import { CounterFlusher } from './worker/counters.js';
import { WorkerStorage } from './worker/storage.js';

export type { Handler } from './worker/run-attempt.js';
export type { BatchHandler } from './worker/run-batch.js';

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

/** Runs a handler for each due job of one queue. */
export class Worker<T = unknown> extends EventEmitter<WorkerEvents<T>> {
  readonly name: string;
  /** This worker's id, as recorded in its leases. */
  readonly id: string;
  private readonly options: ResolvedWorkerOptions<T>;
  /** The keys of each partition (one entry unless `partitions` > 1); a job's lease lives in its own. */
  private readonly partitions: readonly QueueKeys[];
  /** The codec given, else the queue's recorded one (set at start-up). */
  private codec: Codec;
  /** The queue's definition, settled with its config record at start-up (src/definition/). */
  private readonly context: QueueContext;
  private readonly connection: Connection;
  private readonly clock = new ServerClock();
  private readonly sleeper = new Sleeper(APPROACH_SPIN_MS);
  /** Holds a job claimed ahead until it is due by the server clock (start-gate.ts). */
  private readonly gate = new StartGate(this.clock);
  /**
   * Attempts by lease member `<token>|<id>` (the same job can be here twice: a lapsed lease
   * re-claimed), and when each is done: running ones, and prefetched ones not started yet.
   */
  private readonly inFlight = new Map<string, { attempt: Attempt<T>; done: Promise<void> }>();
  /** What every one-job flight tells the worker (Flight): made once, not per job. */
  private readonly lane: FlightLane<T>;
  /** Prefetched attempts waiting for a slot, in claim order: they hold leases already. */
  private readonly prefetched: Attempt<T>[] = [];
  /** claimed, completed and lateness, flushed to the queue's counters once a second. */
  private readonly counters: CounterFlusher;
  /** What `concurrency` bounds: jobs whose handler has not finished. */
  private readonly slots: Slots;
  /** OpenTelemetry, when the application has it; loaded once at start-up, before any job runs. */
  private tracing: Tracing | null = null;
  private readonly storage: WorkerStorage;
  private readonly retry: RetryPolicy;
  private readonly hooks: AttemptHooks<T>;
  private readonly keeper: LeaseKeeper;
  private readonly reaper: Reaper;
  private readonly subscriber: WakeSubscriber;
  /** Where due jobs come from, and the loop claiming them: built at start-up, for the strategy chosen. */
  private source: ClaimSource | undefined;
  private loop: ClaimLoop | undefined;
  private chosenStrategy: Strategy | undefined;
  private ready: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  /** One job per handler call, or (the option `batch`) the batch handler and the batch being formed. */
  private readonly handler: Handler<T> | undefined;
  /** What every attempt of a one-job handler runs with (runAttempt), made at the first job. */
  private runDeps: RunDeps<T> | undefined;
  private readonly batch: { handler: BatchHandler<T>; collector: BatchCollector<Attempt<T>> } | undefined;

  /** A batch worker: the handler takes up to `batch.size` due jobs at once (README, "Batches"). */
  constructor(name: string, handler: BatchHandler<T>, options: BatchWorkerOptions<T>);
  /** Runs `handler` for each due job. */
  constructor(name: string, handler: Handler<T>, options?: WorkerOptions<T>);
  constructor(name: string, handler: Handler<T> | BatchHandler<T>, options: AnyWorkerOptions<T> = {}) {
    super();
    this.name = name;
    this.options = resolveWorkerOptions(options);
    const definition = defineQueue(name, options);
    this.id = this.options.workerId;
    this.codec = definition.codec ?? resolveCodec('json');
    if (typeof handler !== 'function')
      throw new DelayqError('DELAYQ_VALIDATION', 'the handler must be a function');
    this.connection = openConnection(options.connection, true);
    // false: a worker started before its Redis waits for it rather than failing.
    this.context = new QueueContext(this.connection.client, definition, this.clock, false);
    this.partitions = this.context.partitions;
    if (this.connection.owned) this.connection.client.on('error', (err: Error) => this.report(err));
    const client = this.connection.client;
    const o = this.options;
    this.slots = new Slots(o.concurrency);
    this.lane = {
      slots: this.slots,
      next: () => this.startPrefetched(),
      ended: (flight) => {
        this.keeper.untrack(flight.attempt.lease);
        this.inFlight.delete(flight.attempt.claimed.member);
      },
    };
    if (o.batch) {
      // Concurrency counts batches in flight: a slot is held from a batch's dispatch to its handler's end.
      this.batch = {
        handler: handler as BatchHandler<T>,
        collector: new BatchCollector<Attempt<T>>({
          ...o.batch,
          now: () => this.clock.now(),
          dispatch: (attempts) => this.runBatchInSlot(attempts),
        }),
      };
    } else {
      this.handler = handler as Handler<T>;
    }
    this.storage = new WorkerStorage(client, this.partitions, {
      ...o,
      clock: this.clock,
      nextClaimWithin: () => this.sleeper.dueEndWithin(),
      // A grouped job's ack frees its group's slot (its member names the group): the group's next
      // job may be due, and the claim loop, asleep with free slots, claims it with the ack.
      freesClaim: (item) => groupOfLease(item.member) !== undefined,
      wakeClaim: () => this.sleeper.interrupt(),
      onLateLost: (id) =>
        this.report(new LeaseLostError(id, 'the claim reply came back after the lease ended; not started')),
    });
    // Only a backoff the user gave can be overridden by a job's; the default cannot be "silently lost".
    this.retry = new RetryPolicy(options.backoff === undefined ? undefined : o.backoff, o.logger, name);
    this.hooks = {
      completed: (job, result) => {
        this.counters.count('completed', 1, placementOf(job.id, job.group, this.partitions.length));
        this.reaper.finished();
        this.emit('completed', job, result);
      },
      failed: (job, error, retryAt) => this.emit('failed', job, error, retryAt),
      dead: (job, error, id) => {
        this.reaper.finished();
        this.emit('dead', job, error, id);
      },
      error: (err) => this.report(err),
      // Stop renewing first: a renewal racing the ack or fail would find the lease gone and cry wolf.
      settling: (lease) => this.keeper.untrack(lease),
      extendLease: (lease, ms) => this.extendLease(lease, ms),
    };
    this.keeper = new LeaseKeeper({
      leaseMs: o.leaseMs,
      clock: this.clock,
      extend: (ms, held) => this.storage.extend(ms, held),
      onLost: (lease) => this.onLeaseLost(lease),
      onError: (err) => this.report(err),
    });
    this.reaper = new Reaper(
      o.reapIntervalMs,
      () => this.storage.reap(),
      () => this.slots.full(),
      (err) => this.report(err),
      () => this.storage.trim(),
    );
    this.counters = new CounterFlusher(
      (partition, deltas) => flushCounts(client, this.partitions[partition]!, deltas),
      (err) => this.report(err),
    );
    this.subscriber = new WakeSubscriber(
      client,
      this.partitions.map((keys) => keys.wake),
      (due, partition) => {
        this.source?.woken(partition, due);
        // Before the first claim reply the clock has no reading to measure `due` against.
        if (due === null || !this.clock.observed) this.sleeper.wakeNow();
        else {
          const untilDue = due - this.clock.now();
          this.sleeper.wakeWithin(this.loop ? this.loop.wakeFor(untilDue) : untilDue);
        }
      },
      (err) => this.report(err),
      (member) => this.onCancelled(member),
    );
    if (o.autorun) {
      this.run().catch(() => {
        // Reported by run(); waitUntilReady() rejects with it too.
      });
    }
  }

  /** The claim strategy in use, once ready. */
  get strategy(): Strategy | undefined {
    return this.chosenStrategy;
  }

  /** Start claiming (done at construction unless autorun is false). Resolves once claiming. */
  run(): Promise<void> {
    if (this.closing) return Promise.reject(new ClosedError(`worker '${this.name}'`));
    this.ready ??= this.startUp().catch((err: unknown) => {
      this.report(err);
      throw err;
    });
    return this.ready;
  }

  /** Resolves when connected, the strategy chosen, subscribed and claiming; rejects if start-up failed. */
  waitUntilReady(): Promise<void> {
    return this.run();
  }

  /**
   * Stop claiming, wait up to `timeoutMs` (default 10 s) for running handlers, then abort the rest
   * and hand their jobs back to the schedule without charging the attempt. Closes the connection
   * unless it was passed in.
   */
  close({ timeoutMs = 10_000 }: { timeoutMs?: number } = {}): Promise<void> {
    this.closing ??= this.shutDown(timeoutMs);
    return this.closing;
  }

  private async startUp(): Promise<void> {
    const client = this.connection.client;
    const o = this.options;
    // The queue's definition decides strategy, layout, events cap and (unless given) codec.
    const { caps, strategy, layout, eventsCap, codec, record } = await this.context.settle();
    // The recorded group bounds (this worker's, once recorded or checked); none recorded: 1.
    const groups = {
      concurrency: record.groups?.concurrency ?? DEFAULT_GROUP_CONCURRENCY,
      ...(record.groups?.limit && { limit: record.groups.limit }),
    };
    this.storage.groupConcurrency = groups.concurrency;
    this.storage.layout = layout;
    this.chosenStrategy = strategy;
    this.storage.eventsCap = eventsCap;
    this.storage.zmscore = hasZmscore(caps);
    this.codec = codec;
    this.tracing = await loadTracing();
    this.options.logger.info?.(
      `worker ${this.id} on queue '${this.name}': strategy ${strategy}${layout.kind === 'wheel' ? ` (buckets of ${layout.granularityMs} ms)` : ''}, Redis ${caps.version}`,
    );
    await warnIfEvicting(client, (m) => o.logger.warn(m));
    await this.storage.open(this.id, {
      strategy,
      layout,
      leaseMs: o.leaseMs,
      deadMaxCount: o.deadMaxCount,
      deadMaxAgeMs: o.deadMaxAgeMs,
      rate: o.rate,
      groups,
      eventsCap,
      zmscore: this.storage.zmscore,
    });
    await this.subscriber.start();
    if (this.closing) return;
    const source = claimSourceFor({
      client,
      partitions: this.partitions,
      strategy,
      layout,
      claim: (partition, limit, ahead) => this.storage.claim(partition, limit, ahead),
      setBuckets: (partition, starts) => this.storage.setBuckets(partition, starts),
      clock: this.clock,
      sleeper: this.sleeper,
      maxSleepMs: o.maxSleepMs,
      blockingMove: blockingMove(caps),
      onError: (err) => this.report(err),
    });
    this.source = source;
    await source.start();
    // A close() during start() may have stopped the source before it opened its connection.
    if (this.closing) return source.stop();
    this.loop = new ClaimLoop({
      source,
      // Free slots, plus room for the prefetched jobs not yet started; a batch worker with a free
      // slot claims exactly the room left in the batch being formed.
      freeSlots: () =>
        this.batch
          ? this.slots.free() > 0
            ? this.batch.collector.room()
            : 0
          : this.slots.free() + o.prefetch - this.prefetched.length,
      waitForSlot: () => this.slots.waitForSlot(),
      start: (claimed) => this.start(claimed),
      bury: (job) => this.buryUnreadable(job),
      clock: this.clock,
      sleeper: this.sleeper,
      maxSleepMs: o.maxSleepMs,
      // A batch forms from jobs that are due; the wheel takes whole buckets when they end.
      claimAheadMs: this.batch || layout.kind === 'wheel' ? 0 : CLAIM_AHEAD_MS,
      onError: (err) => this.report(err),
    });
    this.keeper.start();
    this.reaper.start();
    this.counters.start();
    this.loop.start();
  }

  private async shutDown(timeoutMs: number): Promise<void> {
    await this.loop?.stop();
    await this.source?.stop();
    this.slots.dropWaiters();
    await this.subscriber.stop();
    // Prefetched jobs (or a batch still forming) never started: handed back uncharged, due at
    // once, for another worker.
    const unstarted = [...this.prefetched.splice(0), ...(this.batch?.collector.take() ?? [])];
    await Promise.all(
      unstarted.map(async (attempt) => {
        await attempt.release('shutdown', 0);
        this.keeper.untrack(attempt.lease);
        this.inFlight.delete(attempt.claimed.member);
      }),
    );
    const running = [...this.inFlight.values()];
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      Promise.all(running.map((f) => f.done)).then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      // A release not applied is reported by the attempt: its lease will expire and the reaper
      // return the job. Nothing is lost.
      await Promise.all([...this.inFlight.values()].map((f) => f.attempt.release('shutdown', 0)));
    }
    await this.keeper.stop();
    await this.reaper.stop();
    await this.counters.close().catch((err: unknown) => this.report(err));
    await this.storage.close().catch((err: unknown) => this.report(err));
    await closeConnection(this.connection);
  }

  /**
   * A claimed job: its attempt holds the lease (renewed by the keeper from now on). It runs at
   * once when a slot is free, else waits among the prefetched for the next slot.
   */
  private start(claimed: ClaimedJob): void {
    const attempt = new Attempt<T>(claimed, this.storage, this.hooks);
    const partition = partitionOfMember(claimed.member, this.partitions.length);
    this.counters.count('claimed', 1, partition);
    // A job claimed ahead starts at its due time (runFlight): no lateness to count.
    this.counters.lateness(Math.max(0, claimed.claimedAt - claimed.runAt), partition);
    this.keeper.track(attempt.lease);
    if (this.batch) {
      // Known here, so a cancel or a lost lease finds the attempt while its batch forms.
      this.inFlight.set(claimed.member, { attempt, done: SETTLED });
      this.batch.collector.add(attempt, claimed.runAt);
    } else if (this.slots.free() > 0) this.runInSlot(attempt);
    else {
      this.prefetched.push(attempt);
      this.inFlight.set(claimed.member, { attempt, done: SETTLED });
    }
  }

  /** Run `attempt` in a slot; when its handler is done the slot goes to the next prefetched job. */
  private runInSlot(attempt: Attempt<T>): void {
    this.slots.hold();
    const flight = new Flight(attempt, this.lane);
    this.inFlight.set(attempt.claimed.member, flight);
    // Never rejects; its end is the flight's (Flight.done), told by the attempt once acked.
    void this.runFlight(flight);
  }

  /** The attempt's run, once it may start: never rejects, and ends the flight whichever way it goes. */
  private runFlight(flight: Flight<T>): Promise<void> {
    const claimed = flight.attempt.claimed;
    // Claimed ahead: held in its slot until due.
    if (claimed.claimedAt < claimed.runAt) return this.runWhenDue(flight);
    return this.runStarted(flight);
  }

  /**
   * A job claimed ahead: its start, by a lower bound of the server clock, is what the job reports
   * as claimedAt (never before runAt).
   */
  private async runWhenDue(flight: Flight<T>): Promise<void> {
    const claimed = flight.attempt.claimed;
    try {
      await this.gate.until(claimed.runAt, claimed.reply);
      claimed.claimedAt = Math.max(claimed.runAt, Math.floor(this.gate.serverNow(claimed.reply)));
    } catch (err) {
      this.report(err);
      flight.ended();
      return;
    }
    return this.runStarted(flight);
  }

  private runStarted(flight: Flight<T>): Promise<void> {
    const attempt = flight.attempt;
    try {
      // Made at the first job, not per job: everything in it is settled by start-up.
      this.runDeps ??= {
        queue: this.name,
        handler: this.handler!,
        codec: this.codec,
        options: this.options,
        retry: this.retry,
        tracing: this.tracing,
        report: (err) => this.report(err),
      };
      // A start held past the lease (the event loop blocked between the claim reply and here, a
      // slot freed late, a gate delayed): the lease is gone and the job may run elsewhere by now,
      // so the handler must not start. Seen in the chaos run: a handler blocking its process for
      // 2 s right after a claim, and the claimed job then started 25 ms after its lease ended.
      if (attempt.lease.lost || this.gate.serverNow(attempt.claimed.reply) >= attempt.lease.deadline) {
        attempt.loseLease('expired before its handler started');
        flight.ended();
        return SETTLED;
      }
    } catch (err) {
      this.report(err);
      flight.ended();
      return SETTLED;
    }
    return runAttempt(attempt, this.runDeps, flight);
  }

  /**
   * Run a formed batch in one slot. Each attempt stays in `inFlight` (so a cancel or a lost lease
   * reaches that job alone) until the batch's fates are all sent.
   */
  private runBatchInSlot(attempts: Array<Attempt<T>>): void {
    const batch = this.batch!;
    const freeSlot = this.slots.take();
    const done = runBatch(attempts, {
      handler: batch.handler,
      queue: this.name,
      tracing: this.tracing,
      codec: this.codec,
      options: this.options,
      retry: this.retry,
      handlerDone: freeSlot,
      report: (err) => this.report(err),
    })
      .catch((err: unknown) => this.report(err))
      .finally(() => {
        for (const attempt of attempts) {
          this.keeper.untrack(attempt.lease);
          this.inFlight.delete(attempt.claimed.member);
        }
        freeSlot();
      });
    for (const attempt of attempts) this.inFlight.set(attempt.claimed.member, { attempt, done });
  }

  /** Start prefetched jobs while slots are free (not once closing: those are handed back). */
  private startPrefetched(): void {
    while (!this.closing && this.prefetched.length > 0 && this.slots.free() > 0) {
      const next = this.prefetched.shift()!;
      // A prefetched job cancelled or lost while it waited is not started: its fate is settled.
      if (next.state !== 'running') {
        this.keeper.untrack(next.lease);
        this.inFlight.delete(next.claimed.member);
        continue;
      }
      this.runInSlot(next);
    }
  }

  /**
   * A leased job whose record this version cannot read (a newer format): buried at once with the
   * reason (fail.lua with no retry), never guessed at.
   */
  private buryUnreadable(job: UnreadableJob): void {
    const claimed: ClaimedJob = {
      id: job.id,
      member: job.member,
      token: tokenOfLease(job.member),
      header: UNREADABLE_HEADER,
      payload: Buffer.alloc(0),
      runAt: 0,
      claimedAt: 0,
      deadline: 0,
    };
    new Attempt<T>(claimed, this.storage, this.hooks)
      .bury(null, job.error)
      .catch((err: unknown) => this.report(err));
  }

  private onLeaseLost(lease: HeldLease): void {
    const flight = this.inFlight.get(lease.member);
    if (!flight) return this.report(new LeaseLostError(lease.id, 'not renewed in time'));
    // A refused renewal may be a cancel whose `C` message this worker missed (its subscription
    // was down): the cancelled set says which, so the handler's signal gets the right reason.
    this.wasCancelled(lease.id, lease.member).then(
      (cancelled) => {
        if (cancelled) flight.attempt.cancel();
        else flight.attempt.loseLease('not renewed in time');
      },
      () => flight.attempt.loseLease('not renewed in time'),
    );
  }

  private async wasCancelled(id: string, leaseMember: string): Promise<boolean> {
    const keys = this.partitions[partitionOfMember(leaseMember, this.partitions.length)]!;
    return (await this.connection.client.zscore(keys.cancelled, id)) !== null;
  }

  /**
   * A `C <lease member>` wake message: queue.cancel() took a running job. A message for another
   * worker's job matches nothing here.
   */
  private onCancelled(member: string): void {
    const running = this.inFlight.get(member);
    if (!running) return;
    this.reaper.finished();
    running.attempt.cancel();
  }

  private async extendLease(lease: HeldLease, ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms <= 0) {
      throw new DelayqError('DELAYQ_VALIDATION', `extendLease needs a positive number of ms, got ${ms}`);
    }
    await this.keeper.extend([lease], Math.round(ms));
    if (lease.lost) throw new LeaseLostError(lease.id, 'could not extend');
  }

  private report(err: unknown): void {
    const error = toError(err);
    if (this.listenerCount('error') > 0) this.emit('error', error);
    else this.options.logger.error(`worker '${this.name}': ${error.message}`, error);
  }
}

/** The `done` of an attempt that has nothing to wait for (yet). */
const SETTLED: Promise<void> = Promise.resolve();

/** What a one-job Flight tells its worker: one per worker. */
interface FlightLane<T> {
  readonly slots: Slots;
  /** Start prefetched jobs while slots are free. */
  next(): void;
  /** The flight's attempt is over: the worker forgets it. */
  ended(flight: Flight<T>): void;
}

/**
 * An attempt of a one-job handler running in a slot: what `inFlight` holds for it, and what its
 * run tells when the handler is done and when the attempt has ended. One object per job, where
 * the flight record, the slot's release and the handler-done callback were three (and closures
 * each).
 */
class Flight<T> implements AttemptFlight {
  private holdsSlot = true;
  private hasEnded = false;
  /** What `done` gave out before the end, resolved by ended(): made only when asked (by close). */
  private endWaiter: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    readonly attempt: Attempt<T>,
    private readonly lane: FlightLane<T>,
  ) {}

  handlerDone(): void {
    if (this.holdsSlot) {
      this.holdsSlot = false;
      this.lane.slots.release();
    }
    this.lane.next();
  }

  /**
   * Settles when the attempt has ended: what close() waits for. Not the run's promise: a
   * completion's run returns when its ack is queued, and the attempt ends when the ack is applied.
   */
  get done(): Promise<void> {
    if (this.hasEnded) return SETTLED;
    if (!this.endWaiter) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.endWaiter = { promise, resolve };
    }
    return this.endWaiter.promise;
  }

  ended(): void {
    this.hasEnded = true;
    this.lane.ended(this);
    this.handlerDone();
    this.endWaiter?.resolve();
  }
}

/** What an attempt of an unreadable record knows of its header: nothing but defaults. */
const UNREADABLE_HEADER = { ...NEW_JOB_HEADER, attempts: 1 };
