/**
 * A busy worker's claims without a worker: claim `limit` due jobs per call with the previous
 * batch's acks riding each call, until `jobs` are claimed, then send the last acks alone. What
 * claim-cost.ts times and redis-instructions.ts counts, so both measure the same calls.
 */
import { claim, type AckItem, type ClaimInput } from '../../src/operations/claim.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import type { RedisClient } from '../../src/redis/connection.js';
import type { QueueKeys } from '../../src/redis/keys.js';

/** Every claim's settings but the limit and the acks: a default zpopmin queue, routine events off. */
export function busyClaimSettings(leaseMs: number): Omit<ClaimInput, 'limit' | 'acks'> {
  return {
    strategy: 'zpopmin',
    leaseMs,
    holder: 1,
    deadMaxCount: 1_000,
    deadMaxAgeMs: 86_400_000,
    rate: { max: 0, perMs: 0 },
    eventsCap: -10_000,
    zmscore: true,
    layout: ZSET_LAYOUT,
  };
}

/** Claim `jobs` due jobs of `keys`, `limit` per call, acking each batch in the next call. */
export async function claimBusily(
  client: RedisClient,
  keys: QueueKeys,
  settings: Omit<ClaimInput, 'limit' | 'acks'>,
  jobs: number,
  limit: number,
): Promise<void> {
  let acks: AckItem[] = [];
  let claimed = 0;
  while (claimed < jobs) {
    const out = await claim(client, keys, { ...settings, limit, acks });
    if (out.jobs.length === 0) throw new Error(`only ${claimed} of ${jobs} jobs were due`);
    // As a worker acks: with the job's header, so the script stores the final record it is sent
    // instead of reading the record to make it.
    acks = out.jobs.map((job) => ({
      member: job.member,
      knownDeadline: job.deadline,
      hadError: false,
      progressed: false,
      header: job.header,
    }));
    claimed += out.jobs.length;
  }
  await claim(client, keys, { ...settings, limit: 0, acks });
}
