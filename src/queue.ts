/**
 * The producer: add jobs, look at them, change waiting ones, manage the dead set.
 */
import type { BackoffSpec, ResolvedBackoff } from './backoff.js';
import type { Codec } from './codec/codec.js';
import {
  decodeEnvelope,
  DEFAULT_MAX_PAYLOAD_BYTES,
  encodeEnvelope,
  resolveCodec,
  type CodecOption,
} from './codec/envelope.js';
import { loadTracing } from './tracing.js';
import { parseDuration, type Duration } from './duration.js';
import { ClosedError, DurabilityError, ValidationError } from './errors.js';
import { assertKnownOptions } from './option-names.js';
import { parseRunAt, resolveAddOptions, type AddOptions, type ResolvedAddOptions } from './job-options.js';
import { add, addReplicated, type AddInput, type AddOutput } from './operations/add.js';
import { counts, getJob, listJobs, type Counts, type JobState, type RawJob } from './operations/inspect.js';
import { cancel, deadRemove, deadRetry, reschedule } from './operations/manage.js';
import {
  closeConnection,
  openConnection,
  type Connection,
  type ConnectionOption,
} from './redis/connection.js';
import { partitionKeys, type QueueKeys } from './redis/keys.js';
import type { RecordedError } from './operations/fail.js';
import { assertSchema, validatePayload, type StandardSchemaV1 } from './schema.js';
import { schedule, schedules, unschedule, type ScheduleInfo, type ScheduleResult } from './schedule/api.js';
import type { ScheduleOptions } from './schedule/definition.js';
import type { ScheduleSpec } from './schedule/spec.js';
import {
  eventsCapFor,
  parseEvent,
  validateEventsOption,
  type EventsOption,
  type JobEvent,
} from './events.js';
import { chooseStrategy, probeCapabilities, type StrategyOption } from './redis/capabilities.js';
import { ServerClock } from './clock.js';
import { checkLayout } from './operations/layout.js';
import { checkPartitionCount, mapByPartition, partitionOf } from './partition/index.js';
import { layoutName, resolveGranularity, ZSET_LAYOUT, type Layout } from './operations/wheel.js';

/** Options of a Queue. */
export interface QueueOptions<T = unknown> {
  /** Validates each payload at add (Standard Schema: zod, valibot, ...); a failure throws ValidationError and writes nothing. */
  schema?: StandardSchemaV1<T, unknown>;
  /** Where Redis is: a URL, ioredis options, or an ioredis instance (left open by close()). Default REDIS_URL or 127.0.0.1:6379. */
  connection?: ConnectionOption;
  /** How envelopes are encoded. Default 'json'. */
  codec?: CodecOption;
  /** The payload schema version written into each job. Default 1. */
  version?: number;
  /** Largest encoded job accepted by add. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Keep about `maxLen` recent job events in a stream (default 10,000 where the server has streams), or false. `only: 'failures'` leaves out added, claimed and completed. */
  events?: EventsOption;
  /** Defaults for add options. */
  defaultJobOptions?: { attempts?: number; backoff?: BackoffSpec };
  /**
   * Where jobs are written, which must match the workers': 'zpopmin' and 'range' share the schedule
   * ZSET layout, 'wheel' writes into the wheel's bucket lists. Default 'auto': the layout the queue
   * already has (recorded by its first explicit Queue or Worker), else the schedule ZSET. A Queue
   * whose explicit strategy does not match the queue's layout throws LayoutMismatchError.
   */
  strategy?: StrategyOption;
  /** With strategy 'wheel': the bucket width; must match the workers'. Default 1000 ms. */
  wheel?: { granularityMs?: number };
  /**
   * Spread the queue over this many hash tags (and so over several Cluster masters); a job's
   * partition follows from its id. Must match the workers' and the count recorded at the queue's
   * first use (else PartitionMismatchError). Not with strategy 'wheel' nor repeating schedules. Default 1.
   */
  partitions?: number;
}

/** What add resolves to. */
export interface AddResult {
  id: string;
  /**
   * When the job is due (for an existing id: the existing job's due time; for the id of a job
   * that has already completed: when it completed, as `completedAt`).
   */
  runAt: Date;
  /** False when a job with this id already existed or recently completed; nothing was written then. */
  created: boolean;
  /**
   * Set when a job with this id completed recently (workers remember completed ids for
   * `rememberCompleted`, default 5 min): the add was a repeat, so nothing was written.
   */
  completedAt?: Date;
  /** With `durability`: how many replicas acknowledged holding the job (at least the number asked). */
  replicated?: number;
}

/** One job of addBulk. */
export interface BulkJob<T> {
  payload: T;
  opts?: AddOptions;
}

/** Everything known about a job. */
export interface JobInfo<T> {
  id: string;
  state: JobState;
  /** The payload; undefined only when the stored bytes could not be decoded (see decodeError). */
  payload: T | undefined;
  decodeError?: string;
  /** Payload schema version the job was written with. */
  version?: number;
  /** Due time of the current or last scheduling. */
  runAt: Date;
  /** Attempts started so far. */
  attempts: number;
  maxAttempts: number;
  createdAt?: Date;
  lastError: RecordedError | null;
  /** For an active job: who holds it and until when (server clock). */
  lease: { workerId: string; startedAt: Date; deadline: Date } | null;
  /** For a dead job: when it died. */
  diedAt?: Date;
}

const DEFAULT_ATTEMPTS = 3;
const QUEUE_OPTIONS: ReadonlySet<string> = new Set([
  'schema',
  'connection',
  'codec',
  'version',
  'maxPayloadBytes',
  'events',
  'defaultJobOptions',
  'strategy',
  'wheel',
  'partitions',
]);
const DEFAULT_JOB_OPTIONS: ReadonlySet<string> = new Set(['attempts', 'backoff']);
/** Jobs per add script call: large enough to amortise the round trip, small enough not to stall Redis. */
const ADD_BATCH = 500;
const DEAD_RETRY_BATCH = 500;

/** A delayed job queue's producer side. */
export class Queue<T = unknown> {
  readonly name: string;
  /** @internal The keys this queue uses: those of its first partition (with one partition, all of them). */
  readonly keys: QueueKeys;
  /** @internal The keys of every partition, partition i at index i (one entry unless `partitions` > 1). */
  readonly partitions: readonly QueueKeys[];
  /** Operations on the dead set. */
  readonly dead: DeadLetters<T>;
  private readonly connection: Connection;
  private readonly codec: Codec;
  private readonly version: number;
  private readonly maxPayloadBytes: number;
  private readonly jobDefaults: { attempts: number; backoff?: ResolvedBackoff };
  private closed = false;
  private readonly eventsOption: number | undefined;
  private readonly strategyOption: StrategyOption;
  private readonly granularityMs: number;
  /** The server clock as seen in script replies: the wheel guesses the bucket of a delay from it. */
  private readonly clock = new ServerClock();
  private setup: Promise<{ eventsCap: number; layout: Layout }> | undefined;

  private readonly schema: StandardSchemaV1<T, unknown> | undefined;

  constructor(name: string, options: QueueOptions<T> = {}) {
    assertKnownOptions(options, QUEUE_OPTIONS, 'queue option');
    if (options.defaultJobOptions !== undefined) {
      assertKnownOptions(options.defaultJobOptions, DEFAULT_JOB_OPTIONS, 'defaultJobOptions option');
    }
    this.partitions = partitionKeys(name, options.partitions ?? 1);
    this.keys = this.partitions[0]!;
    this.name = name;
    this.codec = resolveCodec(options.codec);
    if (options.schema !== undefined) assertSchema(options.schema, 'schema');
    this.schema = options.schema;
    this.version = options.version ?? 1;
    if (!Number.isInteger(this.version) || this.version < 1) {
      throw new ValidationError(
        `version must be a whole number >= 1, got ${String(options.version)}`,
        'version',
      );
    }
    this.maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    if (!Number.isInteger(this.maxPayloadBytes) || this.maxPayloadBytes < 1) {
      throw new ValidationError(
        `maxPayloadBytes must be a whole number >= 1, got ${String(options.maxPayloadBytes)}`,
        'maxPayloadBytes',
      );
    }
    const defaults = resolveAddOptions(
      {
        ...(options.defaultJobOptions?.attempts !== undefined && {
          attempts: options.defaultJobOptions.attempts,
        }),
      },
      { attempts: DEFAULT_ATTEMPTS },
    );
    this.jobDefaults = { attempts: defaults.attempts };
    if (options.defaultJobOptions?.backoff) {
      this.jobDefaults.backoff = resolveAddOptions(
        { backoff: options.defaultJobOptions.backoff },
        this.jobDefaults,
      ).backoff!;
    }
    this.eventsOption = validateEventsOption(options.events);
    this.strategyOption = options.strategy ?? 'auto';
    if (!['auto', 'zpopmin', 'range', 'wheel'].includes(this.strategyOption)) {
      throw new ValidationError(
        `strategy must be 'auto', 'zpopmin', 'range' or 'wheel', got ${JSON.stringify(options.strategy)}`,
        'strategy',
      );
    }
    this.granularityMs = resolveGranularity(options.wheel);
    // A wheel worker waits on one ready list; it has no way to wait on several.
    if (this.partitions.length > 1 && this.strategyOption === 'wheel') {
      throw new ValidationError(
        "partitions > 1 does not work with strategy 'wheel'; use 'auto', 'zpopmin' or 'range'",
        'partitions',
      );
    }
    this.connection = openConnection(options.connection, false);
    // Failures reach callers as rejected calls; without a listener ioredis would also print every
    // failed reconnect attempt (during a failover, say) as an unhandled error event.
    if (this.connection.owned) this.connection.client.on('error', () => {});
    this.dead = new DeadLetters(this);
  }

  /** @internal The ioredis client this queue uses (shared with helpers such as the dashboard). */
  get client(): Connection['client'] {
    return this.connection.client;
  }

  /** Schedule one job. Throws ValidationError, EncodeError or PayloadTooLargeError, writing nothing. */
  async add(payload: T, opts?: AddOptions): Promise<AddResult> {
    const [result] = await this.addBulk([opts === undefined ? { payload } : { payload, opts }]);
    return result!;
  }

  /**
   * Schedule many jobs, one round trip per batch of 500 jobs of one partition (the batches go at
   * once). Every job is validated and encoded before
   * anything is written, so a bad one fails the call with nothing written.
   */
  async addBulk(jobs: ReadonlyArray<BulkJob<T>>): Promise<AddResult[]> {
    this.assertOpen();
    const given: unknown = jobs;
    if (!Array.isArray(given)) throw new ValidationError('addBulk takes an array of { payload, opts }');
    const tracing = await loadTracing();
    if (!tracing) return this.write(jobs, undefined);
    return tracing.send(this.name, jobs.length, (traceparent) => this.write(jobs, traceparent));
  }

  /** addBulk's work; `traceparent` (of the add's span) goes into every envelope. */
  private async write(
    jobs: ReadonlyArray<BulkJob<T>>,
    traceparent: string | undefined,
  ): Promise<AddResult[]> {
    // Validation may be async (Standard Schema allows it); the stored payload is the one given, so
    // a transforming schema runs once, in the worker.
    if (this.schema) {
      const schema = this.schema;
      await Promise.all(
        jobs.map((job, i) =>
          validatePayload(schema, job.payload).catch((err: unknown) => {
            if (jobs.length > 1 && err instanceof Error) err.message = `job ${i}: ${err.message}`;
            throw err;
          }),
        ),
      );
    }
    const durability: Array<ResolvedAddOptions['durability']> = [];
    const inputs: AddInput[] = jobs.map((job, i) => {
      try {
        const opts = resolveAddOptions(job.opts, this.jobDefaults);
        durability[i] = opts.durability;
        const envelope = encodeEnvelope(
          this.codec,
          { id: opts.id, version: this.version, payload: job.payload, ...(traceparent && { traceparent }) },
          this.maxPayloadBytes,
        );
        return {
          id: opts.id,
          when: opts.when,
          envelope,
          meta: {
            m: opts.attempts,
            ...(opts.backoff && { b: opts.backoff }),
            ...(opts.timeoutMs !== undefined && { o: opts.timeoutMs }),
          },
        };
      } catch (err) {
        if (jobs.length > 1 && err instanceof Error) err.message = `job ${i}: ${err.message}`;
        throw err;
      }
    });
    const { eventsCap, layout } = await this.ready();
    // One add call per batch of one partition's jobs; each job's durability travels with it.
    const outputs = await mapByPartition(
      inputs.map((input, i) => ({ input, durability: durability[i] })),
      this.partitions.length,
      (job) => job.input.id,
      (p, batch) =>
        this.addBatch(
          this.partitions[p]!,
          batch.map((job) => job.input),
          eventsCap,
          layout,
          batch.map((job) => job.durability),
        ),
      ADD_BATCH,
    );
    return checkDurability(
      outputs.map((out, i) => ({
        id: inputs[i]!.id,
        runAt: new Date(out.runAt),
        created: out.created,
        ...(out.completedAt !== undefined && { completedAt: new Date(out.completedAt) }),
      })),
      outputs,
      durability,
    );
  }

  /** One add script call; when a job of the batch asks for durability, WAIT for the most any asks. */
  private async addBatch(
    keys: QueueKeys,
    batch: AddInput[],
    eventsCap: number,
    layout: Layout,
    durability: ReadonlyArray<ResolvedAddOptions['durability']>,
  ): Promise<Array<AddOutput & { replicated?: number; waitError?: Error | null }>> {
    const asked = durability.filter((d) => d !== undefined);
    if (asked.length === 0) return add(this.client, keys, batch, eventsCap, layout);
    const wait = {
      replicas: Math.max(...asked.map((d) => d.replicas)),
      timeoutMs: Math.max(...asked.map((d) => d.timeoutMs)),
    };
    const { outputs, replicated, waitError } = await addReplicated(
      this.client,
      keys,
      batch,
      eventsCap,
      wait,
      layout,
    );
    return outputs.map((out) => ({ ...out, replicated, waitError }));
  }

  /** Everything known about job `id`, or null when there is no such job. */
  async get(id: string): Promise<JobInfo<T> | null> {
    this.assertOpen();
    const { layout } = await this.ready();
    const raw = await getJob(this.client, this.keysOf(id), id, layout);
    return raw ? this.toInfo(raw) : null;
  }

  /** Remove a waiting job. False when it is not waiting: unknown, running or dead. */
  async cancel(id: string): Promise<boolean> {
    this.assertOpen();
    const { eventsCap, layout } = await this.ready();
    return cancel(this.client, this.keysOf(id), id, eventsCap, layout);
  }

  /** Move a waiting job to a new time. False when it is not waiting. */
  async reschedule(id: string, opts: { delay?: Duration; runAt?: Date | number }): Promise<boolean> {
    this.assertOpen();
    if ((opts.delay === undefined) === (opts.runAt === undefined)) {
      throw new ValidationError('reschedule needs exactly one of delay or runAt', 'delay');
    }
    const when =
      opts.delay !== undefined
        ? { delay: parseDuration(opts.delay, 'delay') }
        : { at: parseRunAt(opts.runAt) };
    const { eventsCap, layout } = await this.ready();
    return (await reschedule(this.client, this.keysOf(id), { id, when, eventsCap, layout })) !== null;
  }

  /** How many jobs wait (`due`: of those, how many are due now), run and lie dead. */
  async counts(): Promise<Counts> {
    this.assertOpen();
    const { layout } = await this.ready();
    const all = await Promise.all(this.partitions.map((keys) => counts(this.client, keys, layout)));
    const sum: Counts = { scheduled: 0, due: 0, active: 0, dead: 0 };
    for (const c of all) {
      sum.scheduled += c.scheduled;
      sum.due += c.due;
      sum.active += c.active;
      sum.dead += c.dead;
    }
    return sum;
  }

  /** @internal The keys of the partition job `id` lives in. */
  keysOf(id: string): QueueKeys {
    return this.partitions[partitionOf(id, this.partitions.length)]!;
  }

  /** A page of jobs in `state`, earliest first (dead: most recent first). */
  async list(
    state: 'scheduled' | 'active' | 'dead',
    page: { offset?: number; limit?: number } = {},
  ): Promise<Array<JobInfo<T>>> {
    this.assertOpen();
    const offset = page.offset ?? 0;
    const limit = page.limit ?? 50;
    if (!Number.isInteger(offset) || offset < 0)
      throw new ValidationError(`offset must be a whole number >= 0`, 'offset');
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
      throw new ValidationError(`limit must be a whole number from 1 to 10000`, 'limit');
    }
    const { layout } = await this.ready();
    const newestFirst = state === 'dead';
    if (this.partitions.length === 1) {
      const raws = await listJobs(this.client, this.keys, state, { offset, limit, newestFirst }, layout);
      return raws.map((raw) => this.toInfo(raw));
    }
    // The page of the merged order holds at most offset + limit jobs of each partition: read those
    // from every partition, merge by score, cut the page. Deep pages cost P times their depth.
    const pages = await Promise.all(
      this.partitions.map((keys) =>
        listJobs(this.client, keys, state, { offset: 0, limit: offset + limit, newestFirst }, layout),
      ),
    );
    const merged = pages.flat().sort((a, b) => (newestFirst ? b.score - a.score : a.score - b.score));
    return merged.slice(offset, offset + limit).map((raw) => this.toInfo(raw));
  }

  /**
   * Job events as they happen, from the stream entry after `from` ('$', the default: only new
   * ones; '0': everything still kept; or a `streamId` from an earlier event to resume after it).
   * Reads on a connection of its own, closed when the loop ends (break, return, or `signal`).
   */
  async *events(
    opts: { from?: string; signal?: AbortSignal; blockMs?: number; partition?: number } = {},
  ): AsyncGenerator<JobEvent> {
    this.assertOpen();
    // Each partition has its stream (ids of different streams do not order against each other, and
    // one XREAD of several keys is cross-slot on a Cluster): a partitioned queue reads one at a time.
    const partition = opts.partition ?? (this.partitions.length === 1 ? 0 : undefined);
    const keys = partition === undefined ? undefined : this.partitions[partition];
    if (keys === undefined) {
      throw new ValidationError(
        `events of queue '${this.name}' (partitions: ${this.partitions.length}) need the option partition: 0 to ${this.partitions.length - 1}`,
      );
    }
    const { eventsCap } = await this.ready();
    if (eventsCap === 0) throw new ValidationError(`queue '${this.name}' was created with events: false`);
    const reader = this.client.duplicate();
    const stop = (): void => reader.disconnect();
    opts.signal?.addEventListener('abort', stop, { once: true });
    let from = opts.from ?? '$';
    try {
      if (from === '$') {
        // Resolve '$' to the last id now, so nothing written between two reads is missed.
        const last = (await reader.xrevrange(keys.events, '+', '-', 'COUNT', 1))[0];
        from = last ? last[0] : '0-0';
      }
      while (!this.closed && !opts.signal?.aborted) {
        const reply = await reader.xread(
          'COUNT',
          500,
          'BLOCK',
          opts.blockMs ?? 1_000,
          'STREAMS',
          keys.events,
          from,
        );
        for (const [, entries] of reply ?? []) {
          for (const entry of entries) {
            if (opts.signal?.aborted) return;
            from = entry[0];
            yield parseEvent(entry);
          }
        }
      }
    } catch (err) {
      if (!opts.signal?.aborted && !this.closed) throw err;
    } finally {
      opts.signal?.removeEventListener('abort', stop);
      reader.disconnect();
    }
  }

  // --- Repeating schedules (src/schedule/); a Scheduler adds their occurrences. ---

  /**
   * Create or replace the repeating schedule `name`: `{ cron, tz? }` or `{ every }`. Each
   * occurrence becomes a job with id `<name>@<due epoch ms>`, added once however many schedulers run.
   */
  schedule(name: string, spec: ScheduleSpec, payload: T, opts?: ScheduleOptions): Promise<ScheduleResult> {
    this.assertUnpartitioned('repeating schedules');
    return schedule(this, name, spec, payload, opts);
  }

  /** Remove schedule `name` and its waiting next occurrence; false when there was no such schedule. */
  unschedule(name: string): Promise<boolean> {
    this.assertUnpartitioned('repeating schedules');
    return unschedule(this, name);
  }

  /** Every repeating schedule of this queue, the one due next first. */
  schedules(): Promise<Array<ScheduleInfo<T>>> {
    this.assertUnpartitioned('repeating schedules');
    return schedules(this);
  }

  // --- end of repeating schedules ---

  /** Close the connection (unless it was passed in). Calls after close throw ClosedError. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await closeConnection(this.connection);
  }

  /**
   * @internal Throws ValidationError for a feature that needs the queue in one slot: the schedule
   * tick script writes its occurrence jobs into the slot of the schedule definitions.
   */
  assertUnpartitioned(what: string): void {
    if (this.partitions.length > 1) {
      throw new ValidationError(
        `${what} need an unpartitioned queue; queue '${this.name}' has partitions: ${this.partitions.length}`,
      );
    }
  }

  /** @internal */
  assertOpen(): void {
    if (this.closed) throw new ClosedError(`queue '${this.name}'`);
  }

  /** @internal */
  async retryDead(id: string | null, onProgress?: (moved: number) => void): Promise<number> {
    this.assertOpen();
    const { eventsCap, layout } = await this.ready();
    if (id !== null) return deadRetry(this.client, this.keysOf(id), { id, batch: 1, eventsCap, layout });
    let total = 0;
    for (const keys of this.partitions) {
      for (;;) {
        const moved = await deadRetry(this.client, keys, {
          id: null,
          batch: DEAD_RETRY_BATCH,
          eventsCap,
          layout,
        });
        total += moved;
        onProgress?.(total);
        if (moved < DEAD_RETRY_BATCH) break;
      }
    }
    return total;
  }

  /** @internal */
  async removeDead(id: string): Promise<boolean> {
    this.assertOpen();
    return deadRemove(this.client, this.keysOf(id), id);
  }

  /**
   * Once per queue object: probe the server (whether it has streams decides the default for events)
   * and settle the layout with the one stored in Redis. A failure is not kept, so the next call
   * tries again (a LayoutMismatchError then fails again, as it should).
   */
  private ready(): Promise<{ eventsCap: number; layout: Layout }> {
    this.setup ??= this.settle().catch((err: unknown) => {
      this.setup = undefined;
      throw err;
    });
    return this.setup;
  }

  private async settle(): Promise<{ eventsCap: number; layout: Layout }> {
    const caps = await probeCapabilities(this.client);
    await checkPartitionCount(this.client, this.name, this.partitions.length);
    let wanted: Layout | null = null;
    if (this.strategyOption !== 'auto') {
      const strategy = chooseStrategy(this.strategyOption, caps);
      wanted =
        strategy === 'wheel'
          ? { kind: 'wheel', granularityMs: this.granularityMs, clock: this.clock }
          : ZSET_LAYOUT;
    }
    // Every partition records its layout like a queue of its own; they can only differ by misuse,
    // and then checkLayout throws for the odd one out.
    const settled = await Promise.all(
      this.partitions.map((keys) =>
        checkLayout(this.client, keys, this.name, wanted ? layoutName(wanted) : null),
      ),
    );
    const { layout, now } = settled[0]!;
    this.clock.observe(now);
    const stored = /^wheel:(\d+)$/.exec(layout);
    const adopted: Layout = stored
      ? { kind: 'wheel', granularityMs: Number(stored[1]), clock: this.clock }
      : ZSET_LAYOUT;
    return { eventsCap: eventsCapFor(this.eventsOption, caps), layout: wanted ?? adopted };
  }

  private toInfo(raw: RawJob): JobInfo<T> {
    let payload: T | undefined;
    let decodeError: string | undefined;
    let version: number | undefined;
    let createdAt: Date | undefined;
    try {
      const envelope = decodeEnvelope(this.codec, raw.envelope, raw.id);
      payload = envelope.payload as T;
      version = envelope.version;
      createdAt = new Date(envelope.createdAt);
    } catch (err) {
      decodeError = err instanceof Error ? err.message : String(err);
    }
    const info: JobInfo<T> = {
      id: raw.id,
      state: raw.state,
      payload,
      runAt: new Date(raw.state === 'scheduled' ? raw.score : (raw.meta.r ?? raw.score)),
      attempts: raw.meta.a,
      maxAttempts: raw.meta.m,
      lastError: raw.lastError,
      lease:
        raw.state === 'active' && raw.lease
          ? {
              workerId: raw.lease.workerId,
              startedAt: new Date(raw.lease.startedAt),
              deadline: new Date(raw.score),
            }
          : null,
    };
    if (decodeError !== undefined) info.decodeError = decodeError;
    if (version !== undefined) info.version = version;
    if (createdAt !== undefined) info.createdAt = createdAt;
    if (raw.state === 'dead') info.diedAt = new Date(raw.score);
    return info;
  }
}

/**
 * Fill in `replicated` for the jobs that asked for durability, and throw DurabilityError (with every
 * result) when any of them got fewer replicas than it asked for: nothing is accepted silently.
 */
function checkDurability(
  results: AddResult[],
  written: ReadonlyArray<{ replicated?: number; waitError?: Error | null }>,
  durability: ReadonlyArray<ResolvedAddOptions['durability']>,
): AddResult[] {
  let short: { requested: number; replicated: number; timeoutMs: number; cause: Error | null } | undefined;
  results.forEach((result, i) => {
    const asked = durability[i];
    const replicated = written[i]?.replicated;
    if (asked === undefined || replicated === undefined) return;
    result.replicated = replicated;
    if (replicated < asked.replicas && (short === undefined || replicated < short.replicated)) {
      short = {
        requested: asked.replicas,
        replicated,
        timeoutMs: asked.timeoutMs,
        cause: written[i]?.waitError ?? null,
      };
    }
  });
  if (short) {
    throw new DurabilityError(
      short.requested,
      short.replicated,
      short.timeoutMs,
      results,
      short.cause ? { cause: short.cause } : undefined,
    );
  }
  return results;
}

/** The dead set of a queue: jobs that used up their attempts or could not be read, each with its reason. */
export class DeadLetters<T> {
  /** @internal Reached as `queue.dead`. */
  constructor(private readonly queue: Queue<T>) {}

  /** A page of dead jobs, most recent first. */
  list(page: { offset?: number; limit?: number } = {}): Promise<Array<JobInfo<T>>> {
    return this.queue.list('dead', page);
  }

  /**
   * Put the dead job `id` back in the schedule, due now, with attempts reset; returns 1, or 0 when
   * it is not dead. `retry('all')` is job 'all' only: when there is none, it throws and names
   * retryAll() (in 0.1 'all' meant every dead job, which left a job with that id unreachable).
   */
  async retry(id: string): Promise<number> {
    const moved = await this.queue.retryDead(id);
    if (moved === 0 && id === 'all') {
      throw new ValidationError(
        "dead.retry('all') retries the job whose id is 'all', and no such job is dead; to retry every dead job call dead.retryAll()",
        [{ path: 'id', message: 'no dead job has this id; use dead.retryAll() for every dead job' }],
      );
    }
    return moved;
  }

  /** Put every dead job back in the schedule, due now, with attempts reset; returns how many moved. */
  retryAll(opts: { onProgress?: (moved: number) => void } = {}): Promise<number> {
    return this.queue.retryDead(null, opts.onProgress);
  }

  /** Delete a dead job for good; false when it is not dead. */
  remove(id: string): Promise<boolean> {
    return this.queue.removeDead(id);
  }
}
