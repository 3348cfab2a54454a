/**
 * The producer: add jobs, look at them, change waiting ones, manage the dead set.
 */
import type { BackoffSpec } from './backoff.js';
import type { Codec } from './codec/codec.js';
import {
  decodeEnvelope,
  DEFAULT_MAX_PAYLOAD_BYTES,
  encodeEnvelope,
  resolveCodec,
  type CodecOption,
} from './codec/envelope.js';
import { parseDuration, type Duration } from './duration.js';
import { ClosedError, ValidationError } from './errors.js';
import { parseRunAt, resolveAddOptions, type AddOptions } from './job-options.js';
import { add, type AddInput } from './operations/add.js';
import { counts, getJob, listJobs, type Counts, type JobState, type RawJob } from './operations/inspect.js';
import { cancel, deadRemove, deadRetry, reschedule } from './operations/manage.js';
import {
  closeConnection,
  openConnection,
  type Connection,
  type ConnectionOption,
} from './redis/connection.js';
import { queueKeys, type QueueKeys } from './redis/keys.js';
import type { RecordedError } from './operations/fail.js';
import { assertSchema, validatePayload, type StandardSchemaV1 } from './schema.js';

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
  /** Defaults for add options. */
  defaultJobOptions?: { attempts?: number; backoff?: BackoffSpec };
}

/** What add resolves to. */
export interface AddResult {
  id: string;
  /** When the job is due (for an existing id: the existing job's due time). */
  runAt: Date;
  /** False when a job with this id already existed; nothing was written then. */
  created: boolean;
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
/** Jobs per add script call: large enough to amortise the round trip, small enough not to stall Redis. */
const ADD_BATCH = 500;
const DEAD_RETRY_BATCH = 500;

/** A delayed job queue's producer side. */
export class Queue<T = unknown> {
  readonly name: string;
  /** The keys this queue uses. */
  readonly keys: QueueKeys;
  /** Operations on the dead set. */
  readonly dead: DeadLetters<T>;
  private readonly connection: Connection;
  private readonly codec: Codec;
  private readonly version: number;
  private readonly maxPayloadBytes: number;
  private readonly jobDefaults: { attempts: number; backoff?: BackoffSpec };
  private closed = false;

  private readonly schema: StandardSchemaV1<T, unknown> | undefined;

  constructor(name: string, options: QueueOptions<T> = {}) {
    this.keys = queueKeys(name);
    this.name = name;
    this.codec = resolveCodec(options.codec);
    if (options.schema !== undefined) assertSchema(options.schema, 'schema');
    this.schema = options.schema;
    this.version = options.version ?? 1;
    if (!Number.isInteger(this.version) || this.version < 1) {
      throw new ValidationError(`version must be a whole number >= 1, got ${String(options.version)}`);
    }
    this.maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    if (!Number.isInteger(this.maxPayloadBytes) || this.maxPayloadBytes < 1) {
      throw new ValidationError(
        `maxPayloadBytes must be a whole number >= 1, got ${String(options.maxPayloadBytes)}`,
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
    this.connection = openConnection(options.connection, false);
    this.dead = new DeadLetters(this);
  }

  /** The ioredis client this queue uses (shared with helpers such as the dashboard). */
  get client(): Connection['client'] {
    return this.connection.client;
  }

  /** Schedule one job. Throws ValidationError, EncodeError or PayloadTooLargeError, writing nothing. */
  async add(payload: T, opts?: AddOptions): Promise<AddResult> {
    const [result] = await this.addBulk([opts === undefined ? { payload } : { payload, opts }]);
    return result!;
  }

  /**
   * Schedule many jobs, one round trip per batch of 500. Every job is validated and encoded before
   * anything is written, so a bad one fails the call with nothing written.
   */
  async addBulk(jobs: ReadonlyArray<BulkJob<T>>): Promise<AddResult[]> {
    this.assertOpen();
    const given: unknown = jobs;
    if (!Array.isArray(given)) throw new ValidationError('addBulk takes an array of { payload, opts }');
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
    const inputs: AddInput[] = jobs.map((job, i) => {
      try {
        const opts = resolveAddOptions(job.opts, this.jobDefaults);
        const envelope = encodeEnvelope(
          this.codec,
          { id: opts.id, version: this.version, payload: job.payload },
          this.maxPayloadBytes,
        );
        return {
          id: opts.id,
          when: opts.when,
          envelope,
          meta: opts.backoff ? { m: opts.attempts, b: opts.backoff } : { m: opts.attempts },
        };
      } catch (err) {
        if (jobs.length > 1 && err instanceof Error) err.message = `job ${i}: ${err.message}`;
        throw err;
      }
    });
    const batches: AddInput[][] = [];
    for (let i = 0; i < inputs.length; i += ADD_BATCH) batches.push(inputs.slice(i, i + ADD_BATCH));
    const outputs = await Promise.all(batches.map((batch) => add(this.client, this.keys, batch)));
    return outputs
      .flat()
      .map((out, i) => ({ id: inputs[i]!.id, runAt: new Date(out.runAt), created: out.created }));
  }

  /** Everything known about job `id`, or null when there is no such job. */
  async get(id: string): Promise<JobInfo<T> | null> {
    this.assertOpen();
    const raw = await getJob(this.client, this.keys, id);
    return raw ? this.toInfo(raw) : null;
  }

  /** Remove a waiting job. False when it is not waiting: unknown, running or dead. */
  async cancel(id: string): Promise<boolean> {
    this.assertOpen();
    return cancel(this.client, this.keys, id);
  }

  /** Move a waiting job to a new time. False when it is not waiting. */
  async reschedule(id: string, opts: { delay?: Duration; runAt?: Date | number }): Promise<boolean> {
    this.assertOpen();
    if ((opts.delay === undefined) === (opts.runAt === undefined)) {
      throw new ValidationError('reschedule needs exactly one of delay or runAt');
    }
    const when =
      opts.delay !== undefined
        ? { delay: parseDuration(opts.delay, 'delay') }
        : { at: parseRunAt(opts.runAt) };
    return (await reschedule(this.client, this.keys, id, when)) !== null;
  }

  /** How many jobs wait (`due`: of those, how many are due now), run and lie dead. */
  async counts(): Promise<Counts> {
    this.assertOpen();
    const { scheduled, due, active, dead } = await counts(this.client, this.keys);
    return { scheduled, due, active, dead };
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
      throw new ValidationError(`offset must be a whole number >= 0`);
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
      throw new ValidationError(`limit must be a whole number from 1 to 10000`);
    }
    const raws = await listJobs(this.client, this.keys, state, {
      offset,
      limit,
      newestFirst: state === 'dead',
    });
    return raws.map((raw) => this.toInfo(raw));
  }

  /** Close the connection (unless it was passed in). Calls after close throw ClosedError. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await closeConnection(this.connection);
  }

  /** @internal */
  assertOpen(): void {
    if (this.closed) throw new ClosedError(`queue '${this.name}'`);
  }

  /** @internal */
  async retryDead(id: string | null, onProgress?: (moved: number) => void): Promise<number> {
    this.assertOpen();
    if (id !== null) return deadRetry(this.client, this.keys, id, 1);
    let total = 0;
    for (;;) {
      const moved = await deadRetry(this.client, this.keys, null, DEAD_RETRY_BATCH);
      total += moved;
      onProgress?.(total);
      if (moved < DEAD_RETRY_BATCH) return total;
    }
  }

  /** @internal */
  async removeDead(id: string): Promise<boolean> {
    this.assertOpen();
    return deadRemove(this.client, this.keys, id);
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

/** The dead set of a queue: jobs that used up their attempts or could not be read, each with its reason. */
export class DeadLetters<T> {
  constructor(private readonly queue: Queue<T>) {}

  /** A page of dead jobs, most recent first. */
  list(page: { offset?: number; limit?: number } = {}): Promise<Array<JobInfo<T>>> {
    return this.queue.list('dead', page);
  }

  /** Put one dead job (or every one, with id 'all') back in the schedule, due now, with attempts reset; returns how many moved. */
  retry(id: string, opts: { onProgress?: (moved: number) => void } = {}): Promise<number> {
    return this.queue.retryDead(id === 'all' ? null : id, opts.onProgress);
  }

  /** Delete a dead job for good; false when it is not dead. */
  remove(id: string): Promise<boolean> {
    return this.queue.removeDead(id);
  }
}
