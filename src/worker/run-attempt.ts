/**
 * Runs one attempt: decode the payload (the record header came with the claim), hand back a job
 * of a newer payload version, upgrade and validate the payload, run the handler (bounded by the job's timeout, inside a trace span when
 * tracing is loaded). Its fate is the policy's (fate.ts) and is sent by the Attempt (attempt.ts).
 */
import type { Codec } from '../codec/codec.js';
import { encodeJobPayload } from '../codec/payload.js';
import { JobTimeoutError } from '../errors.js';
import { Job } from '../job.js';
import type { Tracing } from '../tracing.js';
import type { Attempt } from './attempt.js';
import type { ResolvedWorkerOptions } from './options.js';
import { NEWER_VERSION, type FatePolicy } from './fate.js';
import { handlerPayload, isPromiseLike } from './handler-payload.js';

/**
 * The function that runs a job. Resolve to complete it (the value is its result, `R`); throw to
 * fail the attempt (an UnrecoverableError: dead at once; a SnoozeError: due again later, uncounted).
 */
export type Handler<T, R = unknown> = (job: Job<T>) => Promise<R>;

/** What running an attempt needs from the worker. */
export interface RunDeps<T> {
  queue: string;
  handler: Handler<T>;
  codec: Codec;
  options: Pick<ResolvedWorkerOptions<T>, 'version' | 'migrate' | 'schema' | 'keepResults'>;
  fates: FatePolicy;
  tracing: Tracing | null;
  report(err: unknown): void;
}

/**
 * The worker's side of one running attempt: told when the handler is done (or will not run) so
 * its slot goes to the next job, and when the attempt has ended. An object the worker already
 * makes per job, not closures: each closure was one more allocation per job.
 */
export interface AttemptFlight {
  /** The handler is done, or will not run: its slot goes to the next job (may be called again). */
  handlerDone(): void;
  /** The attempt is over (its fate sent, or it never ran): called once, last. */
  ended(): void;
}

/**
 * Run `attempt` to its fate; never rejects (an error is given to deps.report). `flight` hears
 * when the handler is done and when the attempt has ended. The one async function a job goes
 * through: each nested one was a promise, a generator and an await more per job.
 */
export async function runAttempt<T>(
  attempt: Attempt<T>,
  deps: RunDeps<T>,
  flight: AttemptFlight,
): Promise<void> {
  // The rare paths are functions of their own: this one's locals are kept in a generator object
  // made per job, sized by every variable and temporary in it.
  // Whether the flight's end is left to the attempt (a completion: told when its ack is applied).
  let endsWithAck = false;
  try {
    const prepared = jobFor(attempt, deps, flight);
    const job = prepared instanceof Job ? prepared : await prepared;
    if (job === undefined) return;
    let result: unknown;
    try {
      result = await observed(attempt, job, deps);
    } catch (err) {
      flight.handlerDone();
      await failed(attempt, job, deps, err);
      return;
    }
    flight.handlerDone();
    // A flow's job always sends its result: its parent reads it (job.childResults()).
    const resultBytes =
      deps.options.keepResults || attempt.claimed.header.flow
        ? encodeResult(deps, job.id, result)
        : undefined;
    // Not awaited: the call that carries the ack tells the attempt, which ends the flight. A
    // promise and an await per job less, and this function's frame is gone before the ack goes.
    attempt.completeAndEnd(job, result, resultBytes, flight);
    endsWithAck = true;
  } catch (err) {
    deps.report(err);
  } finally {
    if (!endsWithAck) flight.ended();
  }
}

/**
 * The job to hand the handler, or a promise of it when it is not ready at once; undefined when
 * the attempt ended without it (handed back to a newer version, or its payload buried).
 */
function jobFor<T>(
  attempt: Attempt<T>,
  deps: RunDeps<T>,
  flight: AttemptFlight,
): Job<T> | Promise<Job<T> | undefined> {
  const { claimed } = attempt;
  const o = deps.options;
  try {
    if (claimed.header.version > o.version) return handBack(attempt, deps, flight);
    const payload = handlerPayload<T>(claimed, deps.codec, o);
    if (isPromiseLike(payload)) return jobWhenReady(attempt, payload, deps, flight);
    return newJob(attempt, payload);
  } catch (err) {
    return buryUnreadable(attempt, deps, flight, err);
  }
}

function newJob<T>(attempt: Attempt<T>, payload: T): Job<T> {
  const { claimed } = attempt;
  const { header } = claimed;
  return new Job<T>(
    claimed.id,
    payload,
    header.attempts,
    header.maxAttempts,
    new Date(claimed.runAt),
    new Date(claimed.claimedAt),
    attempt,
    header.group,
  );
}

/** A payload not ready at once (an asynchronous schema or migration). */
async function jobWhenReady<T>(
  attempt: Attempt<T>,
  payload: PromiseLike<T>,
  deps: RunDeps<T>,
  flight: AttemptFlight,
): Promise<Job<T> | undefined> {
  try {
    return newJob(attempt, await payload);
  } catch (err) {
    return buryUnreadable(attempt, deps, flight, err);
  }
}

/** A rolling deploy: handed back uncharged, due later, so an upgraded worker takes it (fate.ts). */
async function handBack<T>(attempt: Attempt<T>, deps: RunDeps<T>, flight: AttemptFlight): Promise<undefined> {
  try {
    flight.handlerDone();
    await deps.fates.settle(attempt, null, NEWER_VERSION);
  } catch (err) {
    return buryUnreadable(attempt, deps, flight, err);
  }
  return undefined;
}

/** An unreadable, un-upgradable or invalid payload: buried at once with the reason (fate.ts). */
async function buryUnreadable<T>(
  attempt: Attempt<T>,
  deps: RunDeps<T>,
  flight: AttemptFlight,
  error: unknown,
): Promise<undefined> {
  flight.handlerDone();
  await deps.fates.settle(attempt, null, { kind: 'unreadable', error });
  return undefined;
}

/** The handler's run, inside a trace span when tracing is loaded and observed. */
function observed<T>(attempt: Attempt<T>, job: Job<T>, deps: RunDeps<T>): Promise<unknown> {
  const tracing = deps.tracing;
  if (!tracing?.observed()) return runHandler(attempt, job, deps.handler);
  const { claimed } = attempt;
  return tracing.process(
    {
      queue: deps.queue,
      id: job.id,
      attempt: job.attempt,
      runAt: claimed.runAt,
      claimedAt: claimed.claimedAt,
      traceparent: claimed.header.traceparent,
    },
    () => runHandler(attempt, job, deps.handler),
  );
}

/** The handler threw: failed, or buried for good, as the policy says (fate.ts). */
async function failed<T>(attempt: Attempt<T>, job: Job<T>, deps: RunDeps<T>, error: unknown): Promise<void> {
  await deps.fates.settle(attempt, job, { kind: 'threw', error });
}

/**
 * The handler's result as the codec encodes it, for the completed record (kept with keepCompleted); a result
 * the codec cannot encode is reported and the job completes without one (it did run).
 */
function encodeResult<T>(deps: RunDeps<T>, id: string, result: unknown): Buffer | undefined {
  try {
    return encodeJobPayload(deps.codec, id, result, RESULT_MAX_BYTES);
  } catch (err) {
    deps.report(err);
    return undefined;
  }
}

/** A kept result is stored in the completed record; past this it is reported and not kept. */
export const RESULT_MAX_BYTES = 64 * 1024;

/**
 * The handler, bounded by the job's timeoutMs when it has one: at the timeout its signal aborts
 * and the attempt fails with "timed out". A handler that ignores the signal runs on unobserved;
 * its result is not applied.
 */
function runHandler<T>(attempt: Attempt<T>, job: Job<T>, handler: Handler<T>): Promise<unknown> {
  const timeoutMs = attempt.claimed.header.timeoutMs;
  const run = handler(job);
  if (timeoutMs === undefined) return run;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new JobTimeoutError(job.id, timeoutMs);
      attempt.abort(error);
      reject(error);
    }, timeoutMs);
  });
  run.catch(() => {}); // after a timeout, a late rejection is expected and not ours to report
  return Promise.race([run, timedOut]).finally(() => clearTimeout(timer));
}
