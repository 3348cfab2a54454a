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

export async function handlerPayload<T>(
  claimed: ClaimedJob,
  codec: Codec,
  options: Pick<ResolvedWorkerOptions<T>, 'version' | 'migrate' | 'schema'>,
): Promise<T> {
  const decoded = decodeJobPayload(codec, claimed.payload, claimed.id);
  const payload = upgradePayload(decoded, claimed.header.version, options.version, options.migrate);
  return (options.schema ? await validatePayload(options.schema, payload) : payload) as T;
}
