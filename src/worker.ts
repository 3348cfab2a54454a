/**
 * The consumer: claims due jobs, runs the handler, and acks or fails them under a fenced lease.
 * The duties (claim loop, lease keeper, reaper, wake subscription) each live in their own file and
 * are composed here.
 */
import { EventEmitter } from 'node:events';
import { backoffDelay, type BackoffSpec } from './backoff.js';
import { ServerClock, Sleeper } from './clock.js';
import type { Codec } from './codec/codec.js';
import { decodeEnvelope, resolveCodec } from './codec/envelope.js';
import { loadTracing, type Tracing } from './tracing.js';
import {
  ClosedError,
  DelayqError,
  JobTimeoutError,
  LeaseLostError,
  UnsupportedVersionError,
} from './errors.js';
import { validatePayload } from './schema.js';
import { upgradePayload } from './worker/upgrade.js';
import { Job } from './job.js';
import { ackMany } from './operations/ack.js';
import { AckBatcher } from './worker/ack-batcher.js';
import { claim, type ClaimedJob, type ClaimOutput } from './operations/claim.js';
import { extend, type ExtendOutput } from './operations/extend.js';
import { fail, type RecordedError } from './operations/fail.js';
import { reap, type ReapOutput } from './operations/reap.js';
import { release } from './operations/release.js';
import { ZSET_LAYOUT, type Layout } from './operations/wheel.js';
import { blockingMove, type Strategy } from './redis/capabilities.js';
import { closeConnection, openConnection, type Connection } from './redis/connection.js';
import type { QueueKeys } from './redis/keys.js';
import { mapByPartition, partitionOf } from './partition/index.js';
import { QueueContext } from './definition/context.js';
import { defineQueue } from './definition/definition.js';
import { PartitionPicker } from './worker/partition-picker.js';
import { ScriptLeaseLost } from './redis/script-errors.js';
import { WakeSubscriber } from './redis/wake-subscriber.js';
import { ClaimLoop } from './worker/claim-loop.js';
import { LeaseKeeper, type HeldLease } from './worker/lease-keeper.js';
import { resolveWorkerOptions, type ResolvedWorkerOptions, type WorkerOptions } from './worker/options.js';
import { Reaper } from './worker/reaper.js';
import { ReadyWaiter } from './worker/ready-waiter.js';

/** The function that runs a job. Resolve to complete it; throw to fail the attempt. */
export type Handler<T> = (job: Job<T>) => Promise<unknown>;

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

/** How long a partition whose claim failed is left alone (the loop pauses as long when all fail). */
const PARTITION_ERROR_PAUSE_MS = 1_000;

/** A job this worker holds and runs. */
interface InFlight<T> {
  readonly claimed: ClaimedJob;
  readonly lease: HeldLease;
  readonly controller: AbortController;
  job?: Job<T>;
  /** Handed back at shutdown: its result must not be applied, and its refusal is expected. */
  released: boolean;
  lossReported: boolean;
  /** Its handler has finished (or never ran): the slot is free while its ack or fail is sent. */
  slotFreed: boolean;
  done: Promise<void>;
}

/** Runs a handler for each due job of one queue. */
export class Worker<T = unknown> extends EventEmitter<WorkerEvents<T>> {
  readonly name: string;
  /** This worker's id, as recorded in its leases. */
  readonly id: string;
  private readonly options: ResolvedWorkerOptions<T>;
  /** The keys of each partition (one entry unless `partitions` > 1); a job's lease lives in its own. */
  private readonly partitions: readonly QueueKeys[];
  private readonly keys: QueueKeys;
  /** Partitioned queues only: which partitions to claim from next. */
  private readonly picker: PartitionPicker | undefined;
  /** The codec given, else the queue's recorded one (set at start-up). */
  private codec: Codec;
  private readonly connection: Connection;
  /** The queue's definition, settled with its config record at start-up. */
  private readonly context: QueueContext;
  private readonly clock = new ServerClock();
  private readonly sleeper = new Sleeper();
  /** Running jobs by lease token: the same job can be here twice (a lapsed lease re-claimed). */
  private readonly inFlight = new Map<string, InFlight<T>>();
  /**
   * Jobs whose handler has not finished: what `concurrency` bounds. A job whose handler is done
   * but whose ack is still on its way stays in inFlight (its lease is still ours) without holding
   * a slot, so the next claim can take as many jobs as handlers have finished.
   */
  private running = 0;
  /** OpenTelemetry, when the application has it; loaded once at start-up, before any job runs. */
  private tracing: Tracing | null = null;
  private readonly keeper: LeaseKeeper;
  private readonly reaper: Reaper;
  private readonly acks: AckBatcher;
  private readonly loop: ClaimLoop;
  private readonly subscriber: WakeSubscriber;
  private chosenStrategy: Strategy | undefined;
  /** Where waiting jobs live: the schedule ZSET, or the wheel (strategy 'wheel'). Set at start-up. */
  private layout: Layout = ZSET_LAYOUT;
  /** Wheel only: the blocking wait for the ready list, the buckets to pass to the next claim, and ready's length after the last. */
  private waiter: ReadyWaiter | undefined;
  private wheelHead: number[] = [];
  private readyLeft = 0;
  private eventsCap = 0;
  private ready: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private slotWaiters: Array<() => void> = [];

  constructor(
    name: string,
    private readonly handler: Handler<T>,
    options: WorkerOptions<T> = {},
  ) {
    super();
    this.name = name;
    this.options = resolveWorkerOptions(options);
    const definition = defineQueue(name, options);
    this.id = this.options.workerId;
    this.codec = definition.codec ?? resolveCodec('json');
    if (typeof handler !== 'function')
      throw new DelayqError('DELAYQ_VALIDATION', 'the handler must be a function');
    this.connection = openConnection(options.connection, true);
    this.context = new QueueContext(this.connection.client, definition, this.clock, false);
    this.partitions = this.context.partitions;
    this.keys = this.context.keys;
    if (this.partitions.length > 1) {
      this.picker = new PartitionPicker(this.partitions.length, this.options.maxSleepMs);
    }
    if (this.connection.owned) this.connection.client.on('error', (err: Error) => this.report(err));
    const client = this.connection.client;
    const o = this.options;

    this.keeper = new LeaseKeeper({
      leaseMs: o.leaseMs,
      clock: this.clock,
      extend: (ms, held) => this.extendLeases(ms, held),
      onLost: (lease) => this.onLeaseLost(lease, 'not renewed in time'),
      onError: (err) => this.report(err),
    });
    this.acks = new AckBatcher((jobs) =>
      mapByPartition(
        jobs,
        this.partitions.length,
        (job) => job.id,
        (p, batch) =>
          ackMany(client, this.partitions[p]!, {
            jobs: batch,
            keepCompleted: o.keepCompleted,
            rememberCompleted: o.rememberCompleted,
            eventsCap: this.eventsCap,
          }),
      ),
    );
    this.reaper = new Reaper(
      o.reapIntervalMs,
      () => this.reapAll(),
      () => this.running >= o.concurrency,
      (err) => this.report(err),
    );
    this.loop = new ClaimLoop({
      claim: (limit) => this.claim(limit),
      pause: (ms) => this.pause(ms),
      freeSlots: () => o.concurrency - this.running,
      waitForSlot: () => new Promise((resolve) => this.slotWaiters.push(resolve)),
      start: (claimed) => this.start(claimed),
      clock: this.clock,
      sleeper: this.sleeper,
      maxSleepMs: o.maxSleepMs,
      onError: (err) => this.report(err),
    });
    this.subscriber = new WakeSubscriber(
      client,
      this.partitions.map((keys) => keys.wake),
      (due, partition) => {
        if (partition === null) this.picker?.wokenAll();
        else this.picker?.woken(partition, due);
        // Before the first claim reply the clock has no reading to measure `due` against.
        if (due === null || !this.clock.observed) this.sleeper.wakeNow();
        else this.sleeper.wakeWithin(due - this.clock.now());
      },
      (err) => this.report(err),
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
    // The queue's definition (src/definition/) decides strategy, layout, events and codec.
    const { caps, strategy, layout, eventsCap, codec } = await this.context.settle();
    this.layout = layout;
    this.chosenStrategy = strategy;
    this.eventsCap = eventsCap;
    this.codec = codec;
    this.tracing = await loadTracing();
    this.options.logger.info?.(
      `worker ${this.id} on queue '${this.name}': strategy ${strategy}${layout.kind === 'wheel' ? ` (buckets of ${layout.granularityMs} ms)` : ''}, Redis ${caps.version}`,
    );
    await this.warnIfEvicting();
    await this.subscriber.start();
    const move = blockingMove(caps);
    if (strategy === 'wheel' && move !== null) {
      this.waiter = new ReadyWaiter(client, this.keys.ready, move, (err) => this.report(err));
      await this.waiter.start();
    }
    if (this.closing) return;
    this.keeper.start();
    this.reaper.start();
    this.loop.start();
  }

  private async warnIfEvicting(): Promise<void> {
    try {
      const reply = (await this.connection.client.call('CONFIG', 'GET', 'maxmemory-policy')) as string[];
      const policy = reply[1];
      if (policy !== undefined && policy !== 'noeviction') {
        this.options.logger.warn(
          `Redis maxmemory-policy is '${policy}': under memory pressure Redis may evict queue keys and lose jobs. Set maxmemory-policy noeviction`,
        );
      }
    } catch {
      // CONFIG is often disabled on managed servers; the policy then cannot be checked from here.
    }
  }

  /** One claim with the strategy in use; the wheel's claim also promotes the buckets it was told are due. */
  private async claim(limit: number): Promise<ClaimOutput> {
    return this.picker ? this.claimPartitions(this.picker, limit) : this.claimFrom(this.keys, limit);
  }

  /**
   * A partitioned queue's claim: one claim from each due partition with its share of the free
   * slots, all at once (on a Cluster they go to their own masters). A partition whose claim fails is
   * left alone for a while; the jobs the others gave are started all the same.
   */
  private async claimPartitions(picker: PartitionPicker, limit: number): Promise<ClaimOutput> {
    const shares = picker.plan(limit, this.clock.now());
    const settled = await Promise.allSettled(
      shares.map((share) => this.claimFrom(this.partitions[share.partition]!, share.limit)),
    );
    const jobs: ClaimedJob[] = [];
    let now = this.clock.now();
    let failure: unknown;
    settled.forEach((result, i) => {
      const share = shares[i]!;
      if (result.status === 'rejected') {
        failure ??= result.reason;
        picker.failed(share.partition, now, PARTITION_ERROR_PAUSE_MS);
        return;
      }
      const out = result.value;
      now = Math.max(now, out.now);
      jobs.push(...out.jobs);
      picker.claimed(share.partition, share.limit, out.jobs.length, out.now, out.nextAt);
    });
    if (failure !== undefined) {
      // All failed: the loop reports it and pauses. Some failed: go on with the others.
      if (settled.every((r) => r.status === 'rejected')) throw toError(failure);
      this.report(failure);
    }
    return { now, nextAt: picker.nextAt(now), jobs };
  }

  private async claimFrom(keys: QueueKeys, limit: number): Promise<ClaimOutput> {
    const o = this.options;
    const out = await claim(this.connection.client, keys, {
      strategy: this.chosenStrategy ?? 'range',
      limit,
      leaseMs: o.leaseMs,
      workerId: this.id,
      deadMaxCount: o.deadMaxCount,
      deadMaxAgeMs: o.deadMaxAgeMs,
      rate: o.rate,
      eventsCap: this.eventsCap,
      layout: this.layout,
      buckets: this.wheelHead,
    });
    if (out.wheel) {
      this.wheelHead = out.wheel.head;
      this.readyLeft = out.wheel.readyLeft;
      // Due buckets were left because this claim did not pass them: claim again at once, with them.
      if (out.wheel.dueLeft) out.nextAt = out.now;
    }
    return out;
  }

  /**
   * The pause between claims. With the wheel, also end it the moment the ready list holds a job
   * (a promotion by another worker, a job added due now, a reaped or released job), unless ready
   * still holds jobs this worker may not start yet (the rate limit), which would end it at once.
   */
  private async pause(ms: number): Promise<void> {
    const waiter = this.waiter;
    if (!waiter || this.readyLeft > 0) return this.sleeper.sleep(ms);
    const sleep = this.sleeper.sleep(ms);
    const blocked = waiter.wait(ms).then((ready) => {
      if (ready) this.sleeper.interrupt();
    });
    await sleep;
    await waiter.interrupt();
    await blocked;
  }

  /** Reap every partition; what the Reaper learns is the sum, and the earliest deadline left. */
  private async reapAll(): Promise<ReapOutput> {
    const o = this.options;
    const outs = await Promise.all(
      this.partitions.map((keys) =>
        reap(this.connection.client, keys, {
          limit: 1_000,
          deadMaxCount: o.deadMaxCount,
          deadMaxAgeMs: o.deadMaxAgeMs,
          eventsCap: this.eventsCap,
          layout: this.layout,
        }),
      ),
    );
    const deadlines = outs.map((out) => out.nextDeadline).filter((d) => d >= 0);
    return {
      returned: outs.reduce((n, out) => n + out.returned, 0),
      buried: outs.reduce((n, out) => n + out.buried, 0),
      nextDeadline: deadlines.length > 0 ? Math.min(...deadlines) : -1,
    };
  }

  /** Extend held leases, one call per partition they live in; deadlines come back in `held`'s order. */
  private async extendLeases(ms: number, held: readonly HeldLease[]): Promise<ExtendOutput> {
    const client = this.connection.client;
    if (this.partitions.length === 1) return extend(client, this.keys, ms, held);
    let now = 0;
    const deadlines = await mapByPartition(
      held,
      this.partitions.length,
      (lease) => lease.id,
      async (p, batch) => {
        const out = await extend(client, this.partitions[p]!, ms, batch);
        now = Math.max(now, out.now);
        return out.deadlines;
      },
    );
    return { now, deadlines };
  }

  /** The keys of the partition job `id` lives in. */
  private keysOf(id: string): QueueKeys {
    return this.partitions[partitionOf(id, this.partitions.length)]!;
  }

  private async shutDown(timeoutMs: number): Promise<void> {
    await this.loop.stop();
    await this.waiter?.stop();
    this.slotWaiters = [];
    await this.subscriber.stop();
    const running = [...this.inFlight.values()];
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      Promise.all(running.map((f) => f.done)).then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      await Promise.all(
        [...this.inFlight.values()].map(async (flight) => {
          flight.released = true;
          this.keeper.untrack(flight.lease);
          flight.controller.abort(new DelayqError('DELAYQ_SHUTDOWN', 'the worker is shutting down'));
          try {
            await release(this.connection.client, this.keysOf(flight.claimed.id), {
              id: flight.claimed.id,
              token: flight.claimed.token,
              delayMs: 0,
              eventsCap: this.eventsCap,
              layout: this.layout,
            });
          } catch (err) {
            // The lease will expire and the reaper will return the job; nothing is lost.
            this.report(err);
          }
        }),
      );
    }
    await this.keeper.stop();
    await this.reaper.stop();
    await closeConnection(this.connection);
  }

  private start(claimed: ClaimedJob): void {
    const flight: InFlight<T> = {
      claimed,
      lease: { id: claimed.id, token: claimed.token, deadline: claimed.deadline, lost: false },
      controller: new AbortController(),
      released: false,
      lossReported: false,
      slotFreed: false,
      done: Promise.resolve(),
    };
    this.inFlight.set(claimed.token, flight);
    this.running++;
    this.keeper.track(flight.lease);
    flight.done = this.process(flight).finally(() => {
      this.keeper.untrack(flight.lease);
      this.inFlight.delete(claimed.token);
      this.freeSlot(flight);
    });
  }

  /** The handler of `flight` is done (or never ran): its slot goes to the next job. Idempotent. */
  private freeSlot(flight: InFlight<T>): void {
    if (flight.slotFreed) return;
    flight.slotFreed = true;
    this.running--;
    const waiter = this.slotWaiters.shift();
    waiter?.();
  }

  private async process(flight: InFlight<T>): Promise<void> {
    const { claimed } = flight;
    let job: Job<T>;
    let traceparent: string | undefined;
    try {
      const envelope = decodeEnvelope(this.codec, claimed.envelope, claimed.id);
      traceparent = envelope.traceparent;
      if (envelope.version > this.options.version) {
        await this.deferNewerVersion(flight, envelope.version);
        return;
      }
      let payload = upgradePayload(
        envelope.payload,
        envelope.version,
        this.options.version,
        this.options.migrate,
      );
      if (this.options.schema) payload = await validatePayload(this.options.schema, payload);
      job = new Job<T>(
        claimed.id,
        payload as T,
        claimed.meta.a,
        claimed.meta.m,
        new Date(claimed.runAt),
        new Date(claimed.claimedAt),
        flight.controller.signal,
        (ms) => this.extendOne(flight, ms),
      );
      flight.job = job;
    } catch (err) {
      // An unreadable, un-upgradable or invalid payload cannot succeed by retrying: bury it at
      // once with the reason, and go on.
      await this.settleFailure(flight, null, toError(err), null);
      return;
    }
    let result: unknown;
    try {
      const tracing = this.tracing;
      result = await (tracing
        ? tracing.process(
            {
              queue: this.name,
              id: job.id,
              attempt: job.attempt,
              runAt: claimed.runAt,
              claimedAt: claimed.claimedAt,
              traceparent,
            },
            () => this.runHandler(flight, job),
          )
        : this.runHandler(flight, job));
    } catch (err) {
      this.freeSlot(flight);
      if (flight.released) return;
      const error = toError(err);
      const backoff: BackoffSpec | typeof this.options.backoff = claimed.meta.b ?? this.options.backoff;
      await this.settleFailure(flight, job, error, backoffDelay(backoff, claimed.meta.a, error));
      return;
    }
    this.freeSlot(flight);
    if (flight.released) return;
    // Stop renewing first: a renewal racing the ack would find the lease gone and cry wolf.
    this.keeper.untrack(flight.lease);
    try {
      const outcome = await this.acks.ack({
        id: claimed.id,
        token: claimed.token,
        knownDeadline: flight.lease.deadline,
      });
      if (outcome.status === 'lost') throw new ScriptLeaseLost(outcome.detail);
      this.emit('completed', job, result);
    } catch (err) {
      this.onSettleError(flight, err);
    }
  }

  /**
   * The handler, bounded by the job's timeoutMs when it has one: at the timeout its signal aborts
   * and the attempt fails with "timed out". A handler that ignores the signal runs on unobserved;
   * its result is not applied.
   */
  private runHandler(flight: InFlight<T>, job: Job<T>): Promise<unknown> {
    const timeoutMs = flight.claimed.meta.o;
    const run = this.handler(job);
    if (timeoutMs === undefined) return run;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const error = new JobTimeoutError(job.id, timeoutMs);
        flight.controller.abort(error);
        reject(error);
      }, timeoutMs);
    });
    run.catch(() => {}); // after a timeout, a late rejection is expected and not ours to report
    return Promise.race([run, timedOut]).finally(() => clearTimeout(timer));
  }

  /**
   * A job written by a newer payload version than this worker knows (a rolling deploy): hand it
   * back uncharged, due later, so an upgraded worker takes it. It is neither lost nor dead.
   */
  private async deferNewerVersion(flight: InFlight<T>, jobVersion: number): Promise<void> {
    const { id, token } = flight.claimed;
    this.keeper.untrack(flight.lease);
    try {
      await release(this.connection.client, this.keysOf(id), {
        id,
        token,
        delayMs: this.options.newerVersionDelayMs,
        eventsCap: this.eventsCap,
        layout: this.layout,
      });
    } catch (err) {
      this.onSettleError(flight, err);
      return;
    }
    this.report(new UnsupportedVersionError(id, jobVersion, this.options.version));
  }

  /** Record a failed attempt: retry after `retryDelayMs`, or bury when null or attempts are spent. */
  private async settleFailure(
    flight: InFlight<T>,
    job: Job<T> | null,
    error: Error,
    retryDelayMs: number | null,
  ): Promise<void> {
    const { claimed } = flight;
    const recorded: RecordedError = { name: error.name, message: error.message, attempt: claimed.meta.a };
    if (error.stack !== undefined) recorded.stack = error.stack;
    this.keeper.untrack(flight.lease);
    try {
      const out = await fail(this.connection.client, this.keysOf(claimed.id), {
        id: claimed.id,
        token: claimed.token,
        retryDelayMs,
        error: recorded,
        deadMaxCount: this.options.deadMaxCount,
        deadMaxAgeMs: this.options.deadMaxAgeMs,
        eventsCap: this.eventsCap,
        layout: this.layout,
      });
      if (out.outcome === 'retry' && job) this.emit('failed', job, error, new Date(out.at));
      else if (out.outcome === 'dead') this.emit('dead', job, error, claimed.id);
    } catch (err) {
      this.onSettleError(flight, err);
    }
  }

  private onSettleError(flight: InFlight<T>, err: unknown): void {
    if (err instanceof ScriptLeaseLost) {
      if (!flight.released) this.onLeaseLost(flight.lease, `result refused: ${err.detail}`, true);
      return;
    }
    // Not applied (Redis unreachable, ...): the lease will expire and the job come back. Nothing lost.
    this.report(err);
  }

  private onLeaseLost(lease: HeldLease, detail: string, resultRefused = false): void {
    lease.lost = true;
    const flight = this.inFlight.get(lease.token);
    const error = new LeaseLostError(lease.id, detail);
    if (flight && !flight.controller.signal.aborted) flight.controller.abort(error);
    if (flight && flight.lossReported && !resultRefused) return;
    if (flight) flight.lossReported = true;
    this.report(error);
  }

  private async extendOne(flight: InFlight<T>, ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms <= 0) {
      throw new DelayqError('DELAYQ_VALIDATION', `extendLease needs a positive number of ms, got ${ms}`);
    }
    await this.keeper.extend([flight.lease], Math.round(ms));
    if (flight.lease.lost) throw new LeaseLostError(flight.lease.id, 'could not extend');
  }

  private report(err: unknown): void {
    const error = toError(err);
    if (this.listenerCount('error') > 0) this.emit('error', error);
    else this.options.logger.error(`worker '${this.name}': ${error.message}`, error);
  }
}

function toError(err: unknown): Error {
  if (err instanceof Error) return err;
  return new Error(typeof err === 'string' ? err : `non-Error thrown: ${JSON.stringify(err)}`);
}
