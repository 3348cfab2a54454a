/**
 * The consumer: claims due jobs, runs the handler, and acks or fails them under a fenced lease.
 * This file only wires the parts of src/worker/ together: the claim loop over a claim source, the
 * dispatcher of running attempts, the fate policy, the lease keeper, the reaper (and trim), the
 * wake subscriber, the counters, and the storage (one exchange per partition: acks ride on the next
 * claim call) that each attempt's state machine settles its fate through. The parts that depend on
 * the queue's settled definition (layout, events cap, codec, group bounds) are made at start-up,
 * once it is known (src/worker/assemble.ts).
 */
import { EventEmitter } from 'node:events';
import { ServerClock, Sleeper } from './clock.js';
import { QueueContext } from './definition/context.js';
import { defineQueue } from './definition/definition.js';
import { ClosedError, DelayqError, ValidationError } from './errors.js';
import { assertKnownOptions } from './option-names.js';
import { flushCounts } from './operations/stats.js';
import type { Strategy } from './redis/capabilities.js';
import { closeConnection, openConnection, type Connection } from './redis/connection.js';
import { warnIfEvicting } from './redis/eviction.js';
import type { QueueKeys } from './redis/keys.js';
import { WakeSubscriber } from './redis/wake-subscriber.js';
import { FlowCourier } from './queue/flow-courier.js';
import { assemble, claimLoop, claimSource, type AssembleDeps, type Running } from './worker/assemble.js';
import { APPROACH_SPIN_MS } from './worker/claim-loop.js';
import { CounterFlusher } from './worker/counters.js';
import type { WorkerEvents } from './worker/events.js';
import { FatePolicy } from './worker/fate.js';
import { LiveSettings } from './worker/live-settings.js';
import {
  resolveWorkerOptions,
  type AnyWorkerOptions,
  type BatchWorkerOptions,
  type ResolvedWorkerOptions,
  type WorkerOptions,
} from './worker/options.js';
import { RetryPolicy } from './worker/retry-policy.js';
import type { Handler } from './worker/run-attempt.js';
import type { BatchHandler } from './worker/run-batch.js';
import { Slots } from './worker/slots.js';
import { toError } from './worker/to-error.js';

export type { Handler } from './worker/run-attempt.js';
export type { BatchHandler } from './worker/run-batch.js';
export type { WorkerEvents } from './worker/events.js';

const CLOSE_KEYS: ReadonlySet<string> = new Set(['timeoutMs']);

/** Runs a handler for each due job of one queue. */
export class Worker<T = unknown, R = unknown> extends EventEmitter<WorkerEvents<T, R>> {
  readonly name: string;
  /** This worker's id, as recorded in its leases. */
  readonly id: string;
  private readonly options: ResolvedWorkerOptions<T>;
  /** The keys of each partition (one entry unless `partitions` > 1); a job's lease lives in its own. */
  private readonly partitions: readonly QueueKeys[];
  /** The queue's definition, settled with its config record at start-up (src/definition/). */
  private readonly context: QueueContext;
  private readonly connection: Connection;
  private readonly clock = new ServerClock();
  private readonly sleeper = new Sleeper(APPROACH_SPIN_MS);
  /** claimed, completed and lateness, flushed to the queue's counters once a second. */
  private readonly counters: CounterFlusher;
  /** What `concurrency` bounds: jobs (or batches) whose handler has not finished. */
  private readonly slots: Slots;
  private readonly fates: FatePolicy;
  private readonly subscriber: WakeSubscriber;
  /** Follows queue.configure's live settings (a `G` wake message). */
  private readonly live: LiveSettings;
  /** Delivers this queue's flow children whose parents are in other queues (one Redis only). */
  private readonly courier: FlowCourier;
  /** One job per handler call, or (the option `batch`) a batch. */
  private readonly handler: { one: Handler<T> } | { batch: BatchHandler<T> };
  private running: Running<T> | undefined;
  private chosenStrategy: Strategy | undefined;
  private ready: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  /** A batch worker: the handler takes up to `batch.size` due jobs at once (README, "Batches"). */
  constructor(name: string, handler: BatchHandler<T>, options: BatchWorkerOptions<T>);
  /** Runs `handler` for each due job. */
  constructor(name: string, handler: Handler<T, R>, options?: WorkerOptions<T>);
  constructor(name: string, handler: Handler<T, R> | BatchHandler<T>, options: AnyWorkerOptions<T> = {}) {
    super();
    this.name = name;
    this.options = resolveWorkerOptions(options);
    const definition = defineQueue(name, options);
    const o = this.options;
    this.id = o.workerId;
    if (typeof handler !== 'function')
      throw new DelayqError('DELAYQ_VALIDATION', 'the handler must be a function');
    this.handler = o.batch ? { batch: handler as BatchHandler<T> } : { one: handler as Handler<T> };
    this.connection = openConnection(options.connection, true);
    const client = this.connection.client;
    // false: a worker started before its Redis waits for it rather than failing.
    this.context = new QueueContext(client, definition, this.clock, false);
    this.context.warn = (message) => o.logger.warn(message);
    this.partitions = this.context.partitions;
    if (this.connection.owned) client.on('error', (err: Error) => this.report(err));
    this.slots = new Slots(o.concurrency);
    // Only a backoff the user gave can be overridden by a job's; the default cannot be "silently lost".
    const retry = new RetryPolicy(options.backoff === undefined ? undefined : o.backoff, o.logger, name);
    this.fates = new FatePolicy(retry, o, (err) => this.report(err));
    this.counters = new CounterFlusher(
      (partition, deltas) => flushCounts(client, this.partitions[partition]!, deltas),
      (err) => this.report(err),
    );
    this.subscriber = new WakeSubscriber(
      client,
      this.partitions.map((keys) => keys.wake),
      (due, partition) => this.woken(due, partition),
      (err) => this.report(err),
      (member) => {
        if (this.running?.dispatcher.cancelled(member)) this.running.reaper.finished();
      },
      () => this.live.follow(),
      (entry) => this.deliverFlow(entry),
    );
    this.courier = new FlowCourier(client, name, () => this.context.keys);
    this.live = new LiveSettings({
      context: this.context,
      running: () => this.running !== undefined && !this.closing,
      setGroups: (groups) => this.running?.storage.setGroups(groups),
      wake: () => this.sleeper.wakeNow(),
      grow: () => this.grow(),
      log: (message) => o.logger.info?.(`worker ${this.id} on queue '${name}': ${message}`),
      report: (err) => this.report(err),
    });
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
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    try {
      assertKnownOptions(options, CLOSE_KEYS, 'close option');
    } catch (err) {
      // A ValidationError, as a rejection like every other failure of close().
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    const { timeoutMs = 10_000 } = options;
    this.closing ??= this.shutDown(timeoutMs);
    return this.closing;
  }

  private async startUp(): Promise<void> {
    const client = this.connection.client;
    const o = this.options;
    // The queue's definition decides strategy, layout, events cap and (unless given) codec.
    const settled = await this.context.settle();
    // A re-partitioned queue's recorded count, adopted at settle: a rate limit is per partition.
    this.assertLimitFits();
    const { caps, strategy, layout } = settled;
    this.chosenStrategy = strategy;
    const parts = this.parts();
    const running = await assemble(parts, settled);
    this.running = running;
    o.logger.info?.(
      `worker ${this.id} on queue '${this.name}': strategy ${strategy}${layout.kind === 'wheel' ? ` (buckets of ${layout.granularityMs} ms)` : ''}, Redis ${caps.version}`,
    );
    await warnIfEvicting(client, (m) => o.logger.warn(m));
    await running.storage.open(this.id);
    // Settling may have adopted a larger recorded count (a re-partitioned queue).
    await this.subscriber.follow(this.partitions.map((keys) => keys.wake));
    await this.subscriber.start();
    // Outbox entries no worker delivered (none listened, or one stopped before it delivered).
    this.deliverFlow(null);
    // A change recorded between the settle and the subscription (a `G` this worker could not hear
    // yet, such as a re-partition) is read now: one HMGET.
    this.live.follow();
    if (this.closing) return;
    const source = claimSource(parts, settled, running);
    running.source = source;
    await source.start();
    // A close() during start() may have stopped the source before it opened its connection.
    if (this.closing) return source.stop();
    running.loop = claimLoop(parts, settled, running, source);
    running.keeper.start();
    running.reaper.start();
    this.counters.start();
    running.loop.start();
  }

  /**
   * Follow a re-partition (LiveSettings saw the recorded count grow, and the context's partition
   * list with it): register in and open the new partitions, listen on their wake channels, and
   * claim through a source over every partition, the old ones included (their jobs never move).
   */
  private async grow(): Promise<void> {
    const running = this.running;
    if (!running || this.closing) return;
    const settled = await this.context.settle();
    // Claims only from the partitions it opened: the new ones are for workers without a limit.
    this.assertLimitFits();
    await running.storage.grow();
    await this.subscriber.follow(this.partitions.map((keys) => keys.wake));
    // Not claiming yet: start-up makes its source over every partition.
    if (!running.source) return;
    const source = claimSource(this.parts(), settled, running);
    await source.start();
    const old = running.source;
    running.source = source;
    await old.stop();
    this.sleeper.wakeNow();
  }

  /**
   * A worker `limit` (rate) is counted in each partition's limiter, so it holds for one partition
   * only: refused on a queue whose recorded count is above 1 (a re-partitioned one included).
   */
  private assertLimitFits(): void {
    if (this.options.rate.max > 0 && this.partitions.length > 1) {
      throw new ValidationError(
        `limit (a rate limit) does not work with partitions > 1, and queue '${this.name}' records partitions: ${this.partitions.length} (re-partitioned); run this worker without limit`,
        'limit',
      );
    }
  }

  /** This worker's lasting parts, as the settled ones are wired to them (src/worker/assemble.ts). */
  private parts(): AssembleDeps<T, R> {
    return {
      name: this.name,
      client: this.connection.client,
      partitions: this.partitions,
      options: this.options,
      clock: this.clock,
      sleeper: this.sleeper,
      slots: this.slots,
      counters: this.counters,
      fates: this.fates,
      handler: this.handler,
      events: this,
      closing: () => this.closing !== undefined,
      report: (err: unknown) => this.report(err),
      sweepFlows: () => this.courier.sweep(),
    };
  }

  /** A wake message (`due`: when the earliest job is due; null: look now) on `partition`'s channel. */
  private woken(due: number | null, partition: number | null): void {
    const loop = this.running?.loop;
    this.running?.source?.woken(partition, due);
    // Before the first claim reply the clock has no reading to measure `due` against.
    if (due === null || !this.clock.observed) this.sleeper.wakeNow();
    else {
      const untilDue = due - this.clock.now();
      this.sleeper.wakeWithin(loop ? loop.wakeFor(untilDue) : untilDue);
    }
  }

  /** Deliver one flow outbox entry, or (null) sweep the outbox; a failure is reported. */
  private deliverFlow(entry: { parentQueue: string; childId: string } | null): void {
    // A closing worker leaves entries to the next sweep (of any worker of the queue, or a cancel).
    if (this.closing) return;
    const delivery = entry ? this.courier.deliver(entry.parentQueue, entry.childId) : this.courier.sweep();
    delivery.catch((err: unknown) => this.report(err));
  }

  private async shutDown(timeoutMs: number): Promise<void> {
    const running = this.running;
    await running?.loop?.stop();
    await running?.source?.stop();
    this.slots.dropWaiters();
    await this.subscriber.stop();
    await running?.dispatcher.handBackUnstarted();
    await running?.dispatcher.settleRunning(timeoutMs);
    await running?.keeper.stop();
    await running?.reaper.stop();
    await this.counters.close().catch((err: unknown) => this.report(err));
    await running?.storage.close().catch((err: unknown) => this.report(err));
    await closeConnection(this.connection);
  }

  private report(err: unknown): void {
    const error = toError(err);
    if (this.listenerCount('error') > 0) this.emit('error', error);
    else this.options.logger.error(`worker '${this.name}': ${error.message}`, error);
  }
}
