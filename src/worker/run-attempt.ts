/**
 * Runs one attempt: decode the payload (the record header came with the claim), hand back a job
 * of a newer payload version, upgrade and validate the payload, run the handler (bounded by the job's timeout, inside a trace span when
 * tracing is loaded), and choose the fate. Applying the fate is the Attempt's (attempt.ts).
 */
import type { Codec } from '../codec/codec.js';
import { encodeJobPayload } from '../codec/payload.js';
import { isUnrecoverable, JobTimeoutError, UnsupportedVersionError } from '../errors.js';
import { Job } from '../job.js';
import type { Tracing } from '../tracing.js';
import type { Attempt } from './attempt.js';
import type { ResolvedWorkerOptions } from './options.js';
import type { RetryPolicy } from './retry-policy.js';
import { handlerPayload, isPromiseLike } from './handler-payload.js';

/** The function that runs a job. Resolve to complete it; throw to fail the attempt. */
export type Handler<T> = (job: Job<T>) => Promise<unknown>;

/** What running an attempt needs from the worker. */
export interface RunDeps<T> {
  queue: string;
  handler: Handler<T>;
  codec: Codec;
  options: Pick<
    ResolvedWorkerOptions<T>,
    'version' | 'migrate' | 'schema' | 'newerVersionDelayMs' | 'keepResults'
  >;
  retry: RetryPolicy;
  tracing: Tracing | null;
  report(err: unknown): void;
}

/**
 * Run `attempt` to its fate. `handlerDone`: the handler is done, or will not run, so its slot
 * goes to the next job (called once; apart from `deps`, which one worker shares by all attempts).
 */
export async function runAttempt<T>(
  attempt: Attempt<T>,
  deps: RunDeps<T>,
  handlerDone: () => void,
): Promise<void> {
  const { claimed } = attempt;
  const o = deps.options;
  let job: Job<T>;
  let traceparent: string | undefined;
  const { header } = claimed;
  try {
    traceparent = header.traceparent;
    if (header.version > o.version) {
      // A rolling deploy: hand it back uncharged, due later, so an upgraded worker takes it.
      handlerDone();
      const state = await attempt.release('newer-version', o.newerVersionDelayMs);
      if (state === 'released')
        deps.report(new UnsupportedVersionError(claimed.id, header.version, o.version));
      return;
    }
    const payload = handlerPayload<T>(claimed, deps.codec, o);
    job = new Job<T>(
      claimed.id,
      isPromiseLike(payload) ? await payload : payload,
      header.attempts,
      header.maxAttempts,
      new Date(claimed.runAt),
      new Date(claimed.claimedAt),
      attempt,
      header.group,
    );
  } catch (err) {
    // An unreadable, un-upgradable or invalid payload cannot succeed by retrying: bury it at once
    // with the reason, and go on.
    handlerDone();
    await attempt.bury(null, toError(err));
    return;
  }
  let result: unknown;
  try {
    const tracing = deps.tracing;
    result = await (tracing?.observed()
      ? tracing.process(
          {
            queue: deps.queue,
            id: job.id,
            attempt: job.attempt,
            runAt: claimed.runAt,
            claimedAt: claimed.claimedAt,
            traceparent,
          },
          () => runHandler(attempt, job, deps.handler),
        )
      : runHandler(attempt, job, deps.handler));
  } catch (err) {
    handlerDone();
    const error = toError(err);
    // Fail for good: dead at once with its reason, the attempts left unused.
    if (isUnrecoverable(error)) await attempt.bury(job, error);
    else await attempt.fail(job, error, deps.retry.delayMs(job.id, header, error));
    return;
  }
  handlerDone();
  await attempt.complete(job, result, o.keepResults ? encodeResult(deps, job.id, result) : undefined);
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

/** `err` as an Error (handlers may throw anything). */
export function toError(err: unknown): Error {
  if (err instanceof Error) return err;
  return new Error(typeof err === 'string' ? err : `non-Error thrown: ${JSON.stringify(err)}`);
}
