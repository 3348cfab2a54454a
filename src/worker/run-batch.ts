/**
 * Runs one batch (the worker option `batch`): the jobs were claimed together, each by its own lease
 * member, and each keeps its own Attempt (attempt.ts), so every fate is fenced per job. The handler
 * gets them all in one call:
 *
 * - resolve: every job not failed alone completes. The acks queue in the exchange within one turn
 *   of the event loop, so they leave in one claim call (the combined ack);
 * - throw: every job not failed alone fails, each by its own attempts and backoff (an
 *   UnrecoverableError sends them all to the dead set; a SnoozeError makes them all due again
 *   after its delay, no attempt counted);
 * - `job.fail(error)` during the call: that job fails alone, at once;
 * - a job whose lease was lost or that was cancelled while the batch ran: its signal alone aborted,
 *   and its late result is refused and reported by its attempt; the others complete.
 *
 * A job that cannot run (a newer payload version, an unreadable or invalid payload) is handed back
 * or buried before the call, as a single job would be, and is not in the handler's array. Every
 * fate but the batch's completion is chosen by the one policy of single jobs too (fate.ts).
 */
import type { Codec } from '../codec/codec.js';
import { encodeJobPayload } from '../codec/payload.js';
import { DelayqError, JobTimeoutError, ValidationError } from '../errors.js';
import type { ProcessSpanInfo, Tracing } from '../tracing.js';
import type { Attempt } from './attempt.js';
import { BatchJob } from './batch-job.js';
import type { ResolvedWorkerOptions } from './options.js';
import { NEWER_VERSION, type FatePolicy } from './fate.js';
import { RESULT_MAX_BYTES } from './run-attempt.js';
import { handlerPayload } from './handler-payload.js';

/**
 * The function that runs a batch. Resolve to complete every job not failed alone (an array with
 * one entry per job, in order, gives each its own result); throw to fail them all.
 */
export type BatchHandler<T> = (jobs: Array<BatchJob<T>>) => Promise<unknown>;

/** What running a batch needs from the worker. */
export interface BatchRunDeps<T> {
  handler: BatchHandler<T>;
  codec: Codec;
  options: Pick<ResolvedWorkerOptions<T>, 'version' | 'migrate' | 'schema' | 'keepResults'>;
  fates: FatePolicy;
  /** OpenTelemetry, when loaded: the batch runs in one consumer span linked to each job's trace. */
  tracing: Tracing | null;
  /** The queue's name, for the span. */
  queue: string;
  /** The handler is done, or will not run: the batch's slot goes to the next batch. Called once. */
  handlerDone(): void;
  report(err: unknown): void;
}

/** One job of the batch while it runs. */
interface Entry<T> {
  attempt: Attempt<T>;
  job: BatchJob<T>;
  /** Set once the job was failed alone (job.fail or its timeout): the batch's fate skips it. */
  failing?: Promise<void>;
}

/** Run `attempts` as one batch to their fates. */
export async function runBatch<T>(attempts: ReadonlyArray<Attempt<T>>, deps: BatchRunDeps<T>): Promise<void> {
  let returned = false;
  const sideFates: Array<Promise<unknown>> = [];

  const failAlone = (entry: Entry<T>, err: unknown): Promise<void> => {
    if (entry.failing) return entry.failing;
    if (returned) {
      return Promise.reject(
        new DelayqError(
          'DELAYQ_VALIDATION',
          `job ${entry.job.id}: fail() was called after the batch handler returned, when the batch's fate was already sent; call job.fail() before the handler resolves or throws`,
        ),
      );
    }
    entry.failing = failJob(entry, err, deps).then(() => undefined);
    return entry.failing;
  };

  const prepared = await Promise.all(
    attempts.map(async (attempt): Promise<Entry<T> | null> => {
      // Cancelled or lost while the batch formed: its fate is settled already.
      if (attempt.state !== 'running') return null;
      const { claimed } = attempt;
      const { header } = claimed;
      const o = deps.options;
      if (header.version > o.version) {
        // A rolling deploy: handed back uncharged, due later, so an upgraded worker takes it.
        sideFates.push(deps.fates.settle(attempt, null, NEWER_VERSION));
        return null;
      }
      let payload: T;
      try {
        payload = await handlerPayload<T>(claimed, deps.codec, o);
      } catch (error) {
        // Cannot succeed by retrying: buried at once with the reason; the rest of the batch runs.
        sideFates.push(deps.fates.settle(attempt, null, { kind: 'unreadable', error }));
        return null;
      }
      const entry = { attempt } as Entry<T>;
      entry.job = new BatchJob<T>(
        claimed.id,
        payload,
        header.attempts,
        header.maxAttempts,
        new Date(claimed.runAt),
        new Date(claimed.claimedAt),
        attempt,
        header.group,
        (error) => failAlone(entry, error),
      );
      return entry;
    }),
  );
  const entries = prepared.filter((e): e is Entry<T> => e !== null);
  if (entries.length === 0) {
    deps.handlerDone();
    await Promise.all(sideFates);
    return;
  }

  // A job's own timeoutMs fails that job alone (its signal aborts); the handler runs on for the rest.
  const timers = entries.flatMap((entry) => {
    const timeoutMs = entry.attempt.claimed.header.timeoutMs;
    if (timeoutMs === undefined) return [];
    return [
      setTimeout(() => {
        const error = new JobTimeoutError(entry.job.id, timeoutMs);
        entry.attempt.abort(error);
        failAlone(entry, error).catch((err: unknown) => deps.report(err));
      }, timeoutMs),
    ];
  });

  let outcome: { ok: true; result: unknown } | { ok: false; error: unknown };
  try {
    const jobs = entries.map((e) => e.job);
    const { tracing } = deps;
    const run = () => deps.handler(jobs);
    outcome = {
      ok: true,
      result: await (tracing?.observed()
        ? tracing.processBatch(deps.queue, entries.map(spanInfo), run)
        : run()),
    };
  } catch (error) {
    outcome = { ok: false, error };
  }
  returned = true;
  for (const timer of timers) clearTimeout(timer);
  deps.handlerDone();

  const results = outcome.ok ? resultsPerJob(outcome.result, entries.length, deps) : undefined;
  // Every complete() queues its ack synchronously: the exchange sends them in one call.
  const fates = entries.map((entry, i) => {
    if (entry.failing) return entry.failing;
    if (!outcome.ok) return failJob(entry, outcome.error, deps);
    const result = results?.[i];
    // A flow's job always sends its result: its parent reads it (job.childResults()).
    const bytes =
      deps.options.keepResults || entry.attempt.claimed.header.flow
        ? encodeResult(deps, entry.job.id, result)
        : undefined;
    return entry.attempt.complete(entry.job, result, bytes);
  });
  await Promise.all([...fates, ...sideFates]);
}

/** What the batch's span says of one job. */
function spanInfo<T>({ attempt, job }: Entry<T>): Omit<ProcessSpanInfo, 'queue'> {
  const { claimed } = attempt;
  return {
    id: job.id,
    attempt: job.attempt,
    runAt: claimed.runAt,
    claimedAt: claimed.claimedAt,
    traceparent: claimed.header.traceparent,
  };
}

/** Fail one job of the batch: the policy buries or retries it by its own backoff (fate.ts). */
function failJob<T>(entry: Entry<T>, error: unknown, deps: BatchRunDeps<T>): Promise<unknown> {
  return deps.fates.settle(entry.attempt, entry.job, { kind: 'threw', error });
}

/**
 * Each job's result: the handler's value when it is an array with one entry per job. Any other
 * value cannot be split between the jobs; when results are kept (keepCompleted) that is reported
 * (the jobs still complete: they did run), so a result meant to be kept is never dropped silently.
 */
function resultsPerJob<T>(result: unknown, jobs: number, deps: BatchRunDeps<T>): unknown[] | undefined {
  if (Array.isArray(result) && result.length === jobs) return result as unknown[];
  if (deps.options.keepResults && result !== undefined) {
    deps.report(
      new ValidationError(
        `a batch handler keeps results only as an array with one entry per job (${jobs} here, in the order given); got ${Array.isArray(result) ? `an array of ${result.length}` : typeof result}, so no result was kept for this batch`,
        'keepCompleted',
      ),
    );
  }
  return undefined;
}

/** A result as the codec encodes it; one it cannot encode is reported and the job completes without it. */
function encodeResult<T>(deps: BatchRunDeps<T>, id: string, result: unknown): Buffer | undefined {
  if (result === undefined) return undefined;
  try {
    return encodeJobPayload(deps.codec, id, result, RESULT_MAX_BYTES);
  } catch (err) {
    deps.report(err);
    return undefined;
  }
}
