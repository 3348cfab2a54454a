/**
 * The payload a handler gets from a claimed job: decoded by the queue's codec, upgraded from the
 * version it was written with, then validated by the worker's schema. One function for the
 * one-job and the batch runners, so both treat every payload the same way; whatever it throws
 * means the job cannot succeed by retrying (the runners bury it).
 */
import type { Codec } from '../codec/codec.js';
import { decodeJobPayload } from '../codec/payload.js';
import type { ClaimedJob } from '../operations/claim.js';
import { validatePayload } from '../schema.js';
import type { ResolvedWorkerOptions } from './options.js';
import { upgradePayload } from './upgrade.js';

/**
 * The payload, or a promise of it when it is not ready at once (a schema validates asynchronously,
 * or a migration returned a promise): most jobs then cost no promise and no await. Throws, or
 * rejects, when the job cannot succeed.
 */
export function handlerPayload<T>(
  claimed: ClaimedJob,
  codec: Codec,
  options: Pick<ResolvedWorkerOptions<T>, 'version' | 'migrate' | 'schema'>,
): T | PromiseLike<T> {
  const decoded = decodeJobPayload(codec, claimed.payload, claimed.id);
  const payload = upgradePayload(decoded, claimed.header.version, options.version, options.migrate);
  return (options.schema ? validatePayload(options.schema, payload) : payload) as T | PromiseLike<T>;
}

/** Whether `value` is awaited as a promise (what `await` and an async function's return adopt). */
export function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<T>).then === 'function'
  );
}
