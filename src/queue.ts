/**
 * The producer: add jobs, look at them, change waiting ones, manage the dead set. What the queue
 * is (keys, layout, codec, events) comes from its definition, settled with the queue's config
 * record (src/definition/); the add path, the dead set and the event reader live in src/queue/.
 */
import { performance } from 'node:perf_hooks';
import { ServerClock } from './clock.js';
import { QueueContext } from './definition/context.js';
import { defineQueue } from './definition/definition.js';
import { parseDuration, type Duration } from './duration.js';
import { ClosedError, ValidationError } from './errors.js';
import { assertKnownOptions } from './option-names.js';
import type { JobEvent } from './events.js';
import { parseRunAt, type AddOptions } from './job-options.js';
import { readLiveSettings } from './operations/config-record.js';
import { writeLiveSettings } from './operations/configure.js';
import { resolveConfigure, type ConfigureOptions } from './definition/settings.js';
import { cancel } from './operations/cancel.js';
import { reschedule } from './operations/reschedule.js';
import { isPaused, pause } from './operations/pause.js';
import { resume } from './operations/resume.js';
import { closeConnection, openConnection, type Connection } from './redis/connection.js';
import { SETTINGS_MESSAGE } from './redis/wake-subscriber.js';
import type { QueueKeys } from './redis/keys.js';
import { schedule, schedules, unschedule, type ScheduleInfo, type ScheduleResult } from './schedule/api.js';
import type { ScheduleOptions } from './schedule/definition.js';
import type { ScheduleSpec } from './schedule/spec.js';
import { loadTracing } from './tracing.js';
import { DeadLetters } from './queue/dead-letters.js';
import { QueueGroups } from './queue/groups.js';
import { readEvents, type EventsReadOptions } from './queue/events-reader.js';
import { toInfo, type JobInfo } from './queue/info.js';
import { assertQueueOptionNames, resolveProducerOptions, type QueueOptions } from './queue/options.js';
import { registerProducer, type Producer } from './definition/producer.js';
import { checkPage, countAll, listAll, listGroup } from './queue/reads.js';
import { checkSearch, searchAll, type SearchOptions, type SearchPage } from './queue/search.js';
import type { AddResult } from './queue/add-result.js';
import { writeJobs, type BulkJob } from './queue/write.js';
import { FlowCourier } from './queue/flow-courier.js';
import { readJob } from './queue/read-job.js';
import { writeFlow, type FlowJob, type FlowResult } from './queue/flow.js';
import { repartitionQueue, repartitionStatus, type RepartitionStatus } from './queue/repartition.js';
import type { Counts } from './operations/counts.js';
import type { ListState } from './operations/list.js';

export type { QueueOptions } from './queue/options.js';
export type { ConfigureOptions } from './definition/settings.js';

const RESCHEDULE_KEYS: ReadonlySet<string> = new Set(['delay', 'runAt']);
export type { AddResult } from './queue/add-result.js';
export type { BulkJob } from './queue/write.js';
export type { PartitionStatus, RepartitionStatus } from './queue/repartition.js';
export type { JobInfo } from './queue/info.js';
export type { SearchOptions, SearchPage } from './queue/search.js';
export { DeadLetters } from './queue/dead-letters.js';
export { QueueGroups, type GroupInfo } from './queue/groups.js';

/** A delayed job queue's producer side. */
export class Queue<T = unknown> {
  readonly name: string;
  /** Operations on the dead set. */
  readonly dead: DeadLetters<T>;
  /** The queue's groups: list them by backlog, pause, resume, cancel their waiting jobs. */
  readonly groups: QueueGroups;
  private readonly connection: Connection;
  /** Keys, partitions and client; with the producer settings, what producerOf(queue) gives. */
  private readonly context: QueueContext;
  private readonly producer: Producer<T>;
  /** Delivers this queue's flow children whose parents are in other queues (one Redis only). */
  private readonly courier: FlowCourier;
  private closed = false;

  constructor(name: string, options: QueueOptions<T> = {}) {
    assertQueueOptionNames(options);
    const definition = defineQueue(name, options);
    const settings = resolveProducerOptions(options);
    this.name = name;
    this.connection = openConnection(options.connection, false);
    // Failures reach callers as rejected calls; without a listener ioredis would also print every
    // failed reconnect attempt (during a failover, say) as an unhandled error event.
    if (this.connection.owned) this.connection.client.on('error', () => {});
    // The wheel guesses the bucket of a delay from the server clock as seen in script replies.
    this.context = new QueueContext(this.connection.client, definition, new ServerClock());
    this.producer = {
      ...settings,
      context: this.context,
      assertOpen: () => this.assertOpen(),
      assertUnpartitioned: (what) => this.assertUnpartitioned(what),
    };
    registerProducer(this, this.producer);
    this.courier = new FlowCourier(this.connection.client, name, () => this.context.keys);
    this.dead = new DeadLetters(this.producer, (page) => this.list('dead', page));
    this.groups = new QueueGroups(this.producer);
  }

  /** The keys of every partition, partition i at index i (one entry unless `partitions` > 1). */
  private get partitions(): readonly QueueKeys[] {
    return this.context.partitions;
  }

  /** Schedule one job. Throws ValidationError, EncodeError or PayloadTooLargeError, writing nothing. */
  async add(payload: T, opts?: AddOptions): Promise<AddResult> {
    const [result] = await this.addBulk([opts === undefined ? { payload } : { payload, opts }]);
    return result!;
  }

  /**
   * Schedule many jobs: one script call per batch of one partition's jobs, bounded by jobs and by
   * bytes (src/queue/add-calls.ts), two calls out at a time per partition (the partitions go at
   * once). Every job is validated and encoded before
   * anything is written, so a bad one fails the call with nothing written.
   */
  async addBulk(jobs: ReadonlyArray<BulkJob<T>>): Promise<AddResult[]> {
    // Delays count from here (docs/DESIGN.md invariant 7): what follows until the send, connecting and
    // settling the queue included, is taken off them.
    const calledAt = performance.now();
    this.assertOpen();
    const tracing = await loadTracing();
    if (!tracing) return writeJobs(this.producer, jobs, undefined, calledAt);
    return tracing.send(this.name, Array.isArray(jobs) ? jobs.length : 0, (traceparent) =>
      writeJobs(this.producer, jobs, traceparent, calledAt),
    );
  }

  /**
   * Add a flow: a parent job and its children (and theirs), written in one step, whole or not at
   * all. The parent waits ('waiting-children') until every child completed and its own due time
   * came, then runs once; its handler reads the children's results with `job.childResults()`. A
   * child that dies or is cancelled makes the parent dead, naming the child (`opts.onChildFailure`
   * 'fail', the default), or is left out ('ignore'). Bounds: MAX_FLOW_JOBS jobs, MAX_FLOW_CHILDREN
   * children per parent, MAX_FLOW_LEVELS levels; over one, or an invalid option, throws
   * ValidationError, and an id that exists FlowExistsError, with nothing written.
   */
  async addFlow(flow: FlowJob<T>): Promise<FlowResult> {
    const calledAt = performance.now();
    this.assertOpen();
    return writeFlow(this.producer, flow, calledAt);
  }

  /**
   * Everything known about job `id`, or null when there is no such job. `R` types the kept result
   * of a completed job (`get<Receipt>(id)`): what its worker's handler returned.
   */
  async get<R = unknown>(id: string): Promise<JobInfo<T, R> | null> {
    this.assertOpen();
    return readJob<T, R>(this.context, id);
  }

  /**
   * Cancel a waiting or running job: true when it was cancelled. A running job's lease is taken
   * away at once, and its holder's `job.signal` aborts with a CancelledError (told by a wake
   * message); it is not retried or dead-lettered, and get() answers 'cancelled' for a while.
   * False for an unknown, dead, completed or already cancelled job.
   */
  async cancel(id: string): Promise<boolean> {
    this.assertOpen();
    const { eventsCap, layout, record } = await this.context.settle();
    const groupConcurrency = record.groups?.concurrency;
    const how = await this.context.findById(id, (keys) =>
      cancel(this.connection.client, keys, {
        id,
        eventsCap,
        layout,
        name: this.name,
        ...(groupConcurrency && { groupConcurrency }),
      }),
    );
    // Children of this queue whose parents are in other queues and whose delivery no worker
    // made (flow-outbox.lua): delivered now, so a flow never waits on a stopped worker.
    await this.courier.sweep();
    return how !== null;
  }

  /** Move a waiting job to a new time. False when it is not waiting. */
  async reschedule(id: string, opts: { delay?: Duration; runAt?: Date | number }): Promise<boolean> {
    this.assertOpen();
    if (typeof opts !== 'object' || opts === null) {
      throw new ValidationError('reschedule needs { delay } or { runAt }', 'opts');
    }
    assertKnownOptions(opts, RESCHEDULE_KEYS, 'reschedule option');
    if ((opts.delay === undefined) === (opts.runAt === undefined)) {
      throw new ValidationError('reschedule needs exactly one of delay or runAt', 'delay');
    }
    const when =
      opts.delay !== undefined
        ? { delay: parseDuration(opts.delay, 'delay') }
        : { at: parseRunAt(opts.runAt) };
    const { eventsCap, layout, record } = await this.context.settle();
    const groupConcurrency = record.groups?.concurrency;
    const at = await this.context.findById(id, (keys) =>
      reschedule(this.connection.client, keys, {
        id,
        when,
        eventsCap,
        layout,
        ...(groupConcurrency && { groupConcurrency }),
      }),
    );
    return at !== null;
  }

  /**
   * How many jobs wait (`due`: of those, how many are due now, of every class: default,
   * prioritized and grouped; `held`: of the due ones, how many their group keeps from starting
   * now), run, lie dead, and are kept as completed or cancelled, and how many flow parents wait
   * for their children (`waitingChildren`: in no other figure until their last child completed).
   */
  async counts(): Promise<Counts> {
    this.assertOpen();
    const { scheduled, due, held, active, dead, completed, cancelled, waitingChildren } = await countAll(
      this.context,
    );
    return { scheduled, due, held, active, dead, completed, cancelled, waitingChildren };
  }

  /**
   * Stop every worker of the queue from claiming: the claim script itself refuses while paused, and
   * a wake message tells sleeping workers to wait for the resume. Adds are still accepted, running
   * jobs finish, acks, fails and reaps go on. With partitions, each is paused by its own call.
   */
  async pause(): Promise<void> {
    this.assertOpen();
    await this.followCount();
    await pause(this.connection.client, this.partitions);
  }

  /**
   * Let workers claim again, waking every one of them so due jobs start at once. A job that fell
   * due during the pause keeps its due time: its lateness shows the pause.
   */
  async resume(): Promise<void> {
    this.assertOpen();
    await this.followCount();
    await resume(this.connection.client, this.partitions);
  }

  /**
   * Change the queue's live settings, the group bounds, on the running queue: `groups.concurrency`
   * (running jobs per group across all workers) and `groups.limit` (`{ max, per }`, or null for
   * none). Recorded in the queue's config record in one step; every worker follows within about a
   * second, without a restart (a `G` wake message makes it read the record again). Throws
   * ValidationError, naming the key or value and what to write, before anything is written.
   */
  async configure(options: ConfigureOptions): Promise<void> {
    this.assertOpen();
    const fields = resolveConfigure(options);
    await this.context.settle();
    await writeLiveSettings(this.connection.client, this.name, fields);
    await this.context.adoptLive(await readLiveSettings(this.connection.client, this.name));
    await Promise.all(
      this.partitions.map((keys) => this.connection.client.publish(keys.wake, SETTINGS_MESSAGE)),
    );
  }

  /**
   * Settle, then read the recorded partition count again: a pause must reach every partition, the
   * ones a re-partition added since this client last looked included (one HMGET).
   */
  private async followCount(): Promise<void> {
    await this.context.settle();
    await this.context.adoptLive(await readLiveSettings(this.connection.client, this.name));
  }

  /**
   * Grow the queue to `count` partitions while producers and workers run (docs/CLUSTER.md,
   * "Re-partitioning a live queue"): no job moves; jobs with generated ids spread over the new
   * partitions, jobs whose id the caller chose stay placed by the count before the first
   * re-partition; workers follow within about a second, producers within a second of adding.
   * Throws RepartitionRefusedError for a smaller count (shrinking is not supported), a paused
   * queue, groups, repeating schedules or the wheel, having written nothing.
   */
  async repartition(count: number): Promise<RepartitionStatus> {
    this.assertOpen();
    return repartitionQueue(this.context, count);
  }

  /** The recorded partition counts, and per partition its jobs and the workers claiming from it. */
  async repartitionStatus(): Promise<RepartitionStatus> {
    this.assertOpen();
    return repartitionStatus(this.context);
  }

  /** Whether the queue is paused (with partitions: whether any of them is). */
  async isPaused(): Promise<boolean> {
    this.assertOpen();
    await this.followCount();
    return isPaused(this.connection.client, this.partitions);
  }

  /**
   * A page of jobs in `state`: scheduled in claim order for the due prioritized ones, then by due
   * time; active by lease deadline; dead, completed and cancelled most recent first;
   * 'waiting-children' (flow parents waiting for their children) by their own due time. With
   * `group`, only that group's scheduled jobs (by due time) or active ones (by lease deadline).
   */
  async list(
    state: ListState,
    page: { group?: string; offset?: number; limit?: number } = {},
  ): Promise<Array<JobInfo<T>>> {
    this.assertOpen();
    // `group` is list's own key; checkPage refuses any key a page does not have.
    const { group, ...rest } = typeof page === 'object' && page !== null ? page : ({} as { group?: string });
    const checked = checkPage(typeof page === 'object' && page !== null ? rest : page);
    const { layout, codec } = await this.context.settle();
    const raws =
      group === undefined
        ? await listAll(this.context, layout, state, checked)
        : await listGroup(this.context, state, group, checked);
    return raws.map((raw) => toInfo<T>(codec, raw));
  }

  /**
   * Find jobs by state, group, id prefix and time range, a page at a time: `{ jobs, cursor }`;
   * pass `cursor` back for the next page (null: nothing more). Every filter given must hold; `from`
   * and `to` bound the job's time in its state (scheduled, and 'waiting-children' for a flow
   * parent waiting for its children: due; active: started; finished: when it ended). Order: by
   * that time within each state (the waiting classes one after the other; dead, completed and
   * cancelled newest first), the states in the order of a job's life.
   *
   * Cost: no index is kept for it (adds and claims pay nothing). Each state is a sorted set by
   * time: a time range is found in O(log N), then the entries in it are looked at one by one for
   * the id prefix and the group, at most 2,000 per script call (1 to 2 ms of Redis) and 100,000
   * per search() call, so a page can hold fewer than `limit` jobs, even none, with a cursor to go
   * on. An id prefix alone looks at every job of the states searched (a million jobs: about ten
   * calls). Throws ValidationError, naming the option, for an unknown option, state or group, an
   * empty idPrefix, from after to, a limit outside 1..1000 or a cursor that is not from this
   * search.
   */
  async search(options: SearchOptions = {}): Promise<SearchPage<JobInfo<T>>> {
    this.assertOpen();
    const search = checkSearch(options);
    const { layout, codec } = await this.context.settle();
    const { jobs, cursor } = await searchAll(this.context, layout, search);
    return { jobs: jobs.map((raw) => toInfo<T>(codec, raw)), cursor };
  }

  /**
   * Job events as they happen, from the stream entry after `from` ('$', the default: only new
   * ones; '0': everything still kept; or a `streamId` from an earlier event to resume after it).
   * Reads on a connection of its own, closed when the loop ends (break, return, or `signal`).
   */
  async *events(opts: EventsReadOptions = {}): AsyncGenerator<JobEvent> {
    this.assertOpen();
    yield* readEvents(this.context, opts, () => this.closed);
  }

  // --- Repeating schedules (src/schedule/); a Scheduler adds their occurrences. ---

  /**
   * Create or replace the repeating schedule `name`: `{ cron, tz? }` or `{ every }`. Each
   * occurrence becomes a job with id `<name>@<due epoch ms>`, added once however many schedulers run.
   */
  schedule(name: string, spec: ScheduleSpec, payload: T, opts?: ScheduleOptions): Promise<ScheduleResult> {
    this.assertUnpartitioned('repeating schedules');
    return schedule(this.producer, name, spec, payload, opts);
  }

  /** Remove schedule `name` and its waiting next occurrence; false when there was no such schedule. */
  unschedule(name: string): Promise<boolean> {
    this.assertUnpartitioned('repeating schedules');
    return unschedule(this.producer, name);
  }

  /** Every repeating schedule of this queue, the one due next first. */
  schedules(): Promise<Array<ScheduleInfo<T>>> {
    this.assertUnpartitioned('repeating schedules');
    return schedules(this.producer);
  }

  // --- end of repeating schedules ---

  /** Close the connection (unless it was passed in). Calls after close throw ClosedError. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await closeConnection(this.connection);
  }

  /** Throws ValidationError for a feature that needs the queue in one slot (Producer). */
  private assertUnpartitioned(what: string): void {
    if (this.partitions.length > 1) {
      throw new ValidationError(
        `${what} need an unpartitioned queue; queue '${this.name}' has partitions: ${this.partitions.length}`,
      );
    }
  }

  /** Throws ClosedError once closed. */
  private assertOpen(): void {
    if (this.closed) throw new ClosedError(`queue '${this.name}'`);
  }
}
