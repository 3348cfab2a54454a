/**
 * delayq/testing: what you need to test your own handlers. A throwaway redis-server
 * (startRedis), drain(queue, handler) to run everything due and wait, and runHandler(handler,
 * payload) to run a handler against a job with no Redis and no worker at all.
 */
import type { Codec } from '../codec/codec.js';
import {
  DEFAULT_MAX_PAYLOAD_BYTES,
  decodeJobPayload,
  encodeJobPayload,
  resolveCodec,
  type CodecOption,
} from '../codec/payload.js';
import { LogLimitError, ValidationError } from '../errors.js';
import { Job } from '../job.js';
import type { Queue } from '../queue.js';
import { producerOf } from '../definition/producer.js';
import { validatePayload, type StandardSchemaV1 } from '../schema.js';
import { Worker, type Handler } from '../worker.js';
import { checkLogLine, LOG_MAX_LINES_PER_ATTEMPT } from '../log-line.js';
import { encodeProgress } from '../worker/progress-value.js';
import type { WorkerOptions } from '../worker/options.js';

export { startRedis, freePort } from './redis-server.js';
export type { RedisServer, RedisServerOptions } from './redis-server.js';

/** Options of drain: those of a Worker (codec defaults to the queue's), and a bound on the wait. */
export interface DrainOptions<T> extends Omit<WorkerOptions<T>, 'connection' | 'autorun'> {
  /** Give up after this long (default 10 s): drain then throws, saying what is still due or active. */
  timeoutMs?: number;
}

/** What drain ran, in the order each settled. */
export interface DrainResult<T> {
  completed: Array<{ id: string; payload: T; result: unknown }>;
  /** Failed attempts with attempts left: each job waits in the schedule for its retry. */
  failed: Array<{ id: string; error: Error; retryAt: Date }>;
  /** Jobs that went to the dead set. */
  dead: Array<{ id: string; error: Error }>;
  /** Jobs whose handler threw a SnoozeError: each waits in the schedule until about `runAt`. */
  snoozed: Array<{ id: string; runAt: Date; delayMs: number }>;
  /** Problems outside handlers (Redis errors, lost leases). */
  errors: Error[];
}

/** How often drain looks whether the queue is idle. */
const DRAIN_POLL_MS = 10;

/**
 * Run `handler` on every job of `queue` that is due now (and on any that falls due while it
 * runs), with a worker of its own on the queue's connection, and resolve once the queue has
 * nothing due and nothing active. A job that fails with attempts left waits for its retry in
 * the schedule and is reported in `failed`, a snoozed one in `snoozed`; drain does not wait for
 * either.
 */
export async function drain<T>(
  queue: Queue<T>,
  handler: Handler<T>,
  opts: DrainOptions<T> = {},
): Promise<DrainResult<T>> {
  const { timeoutMs = 10_000, ...workerOptions } = opts;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new ValidationError(
      `timeoutMs must be a positive number of ms, got ${String(timeoutMs)}`,
      'timeoutMs',
    );
  }
  const result: DrainResult<T> = { completed: [], failed: [], dead: [], snoozed: [], errors: [] };
  const worker = new Worker<T>(queue.name, handler, {
    // The queue's own codec when it was given one; else the worker adopts the recorded one.
    ...codecOf(queue),
    ...workerOptions,
    connection: producerOf(queue).context.client,
  });
  worker.on('completed', (job, value) =>
    result.completed.push({ id: job.id, payload: job.payload, result: value }),
  );
  worker.on('failed', (job, error, retryAt) => result.failed.push({ id: job.id, error, retryAt }));
  worker.on('dead', (_job, error, id) => result.dead.push({ id, error }));
  worker.on('snoozed', (job, runAt, delayMs) => result.snoozed.push({ id: job.id, runAt, delayMs }));
  worker.on('error', (error) => result.errors.push(error));
  try {
    await worker.waitUntilReady();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // claim moves a job from due to active and ack/fail move it on, each atomically, so a job
      // still to be handled is always counted in one of the two.
      const counts = await queue.counts();
      if (counts.due === 0 && counts.active === 0) break;
      if (Date.now() >= deadline) {
        throw new Error(
          `drain: queue '${queue.name}' still has ${counts.due} due and ${counts.active} active jobs after ${timeoutMs} ms`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    }
  } finally {
    await worker.close();
  }
  return result;
}

/** The job runHandler builds, and how the payload gets to the handler. */
export interface RunHandlerOptions<T> {
  /** Default 'test-job'. */
  id?: string;
  /** Default 1. */
  attempt?: number;
  /** Default 3. */
  maxAttempts?: number;
  /** Default now. */
  runAt?: Date;
  /** The job's signal: abort it to test how the handler reacts to a lost lease or a shutdown. */
  signal?: AbortSignal;
  /**
   * Send the payload through this codec first, so the handler sees what it would see coming from
   * Redis (and a payload the codec cannot carry fails here, as add would). Default 'json'; false
   * passes the payload as it is.
   */
  codec?: CodecOption | false;
  /** Validate (and transform) the payload as a Worker with this schema would. */
  schema?: StandardSchemaV1<unknown, T>;
  /** Called for each job.extendLease(ms) the handler makes. */
  onExtendLease?: (ms: number) => void;
  /** Called for each job.progress(value) the handler makes with a value a worker would accept. */
  onProgress?: (value: unknown) => void;
  /** Called for each job.log(line) the handler makes with a line a worker would accept. */
  onLog?: (line: string) => void;
  /** What job.childResults() resolves to (a flow parent's children's results). Default `{}`. */
  childResults?: Record<string, unknown>;
}

/**
 * Run `handler` once against a job built from `payload`, without Redis or a worker. Resolves to
 * what the handler resolves to; rejects with what it throws.
 */
export async function runHandler<T, R>(
  handler: (job: Job<T>) => Promise<R>,
  payload: T,
  opts: RunHandlerOptions<T> = {},
): Promise<R> {
  const id = opts.id ?? 'test-job';
  let value: unknown = payload;
  if (opts.codec !== false) {
    const codec = resolveCodec(opts.codec);
    const bytes = encodeJobPayload(codec, id, payload, DEFAULT_MAX_PAYLOAD_BYTES);
    value = decodeJobPayload(codec, bytes, id);
  }
  if (opts.schema) value = await validatePayload(opts.schema, value);
  const now = new Date();
  const signal = opts.signal ?? new AbortController().signal;
  let lines = 0;
  const job = new Job<T>(id, value as T, opts.attempt ?? 1, opts.maxAttempts ?? 3, opts.runAt ?? now, now, {
    signal,
    childResults: async () => ({ ...opts.childResults }),
    extendLease: async (ms) => opts.onExtendLease?.(ms),
    reportProgress: async (value) => {
      // The worker's check, so a value it would refuse is refused here too.
      encodeProgress(id, value);
      opts.onProgress?.(value);
    },
    writeLog: async (line) => {
      // The worker's checks, so a line it would refuse is refused here too.
      checkLogLine(id, line);
      if (++lines > LOG_MAX_LINES_PER_ATTEMPT) {
        throw new LogLimitError(id, 'lines', LOG_MAX_LINES_PER_ATTEMPT, LOG_MAX_LINES_PER_ATTEMPT);
      }
      opts.onLog?.(line);
    },
  });
  return handler(job);
}

/** `{ codec }` of the codec `queue` was given, or nothing (the recorded codec is then adopted). */
function codecOf(queue: object): { codec?: Codec } {
  const codec = producerOf(queue).context.definition.codec;
  return codec ? { codec } : {};
}
