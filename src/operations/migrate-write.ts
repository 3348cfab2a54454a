/**
 * The `migrate-write` operation (migrate-write.lua): write a chunk of converted jobs, each with a
 * compare-and-set on its layout-1 meta and lease, deleting the old entries.
 */
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { legacyJobKeys, type PartitionKeys } from './migrate-keys.js';
import { asArray, str } from './reply.js';

/** One job's conversion as migrate-write.lua takes it (src/migrate/convert.ts builds them). */
export interface JobWrite {
  readonly id: string;
  /** The layout-1 meta and lease as read ('' = none): the compare-and-set. */
  readonly meta: string;
  readonly lease: string;
  /** The layout-2 record, or null to write none. */
  readonly record: Buffer | null;
  /** Where it goes: 's' waiting, 'a' running, 'd' dead, 'c' completed, 'x' cancelled, '' nowhere. */
  readonly target: string;
  /** Its due time, lease deadline, or when it died, completed or was cancelled. */
  readonly score: number;
  /** With target 'a': the lease member "<claims>.<claimedAt>|<id>". */
  readonly member: string;
  /** The last error JSON for `e`, or ''. */
  readonly error: string;
}

/** Apply `conversions` (migrate-write.lua); per job true when written, false when it changed since the read. */
export async function writeChunk(
  client: RedisClient,
  keys: PartitionKeys,
  conversions: readonly JobWrite[],
): Promise<boolean[]> {
  if (conversions.length === 0) return [];
  const o = keys.old;
  const c = keys.current;
  const reply = asArray(
    await runScript(
      client,
      script('migrate-write'),
      [...legacyJobKeys(o), c.cancelled, c.records, c.waiting, c.leases, c.dead, c.completed, c.errors],
      [
        conversions.length,
        ...conversions.flatMap((v) => [
          v.id,
          v.meta,
          v.lease,
          v.record ?? '',
          v.target,
          v.target === '' ? '' : String(v.score),
          v.member,
          v.error,
        ]),
      ],
    ),
    'migrate-write',
  );
  return conversions.map((_, i) => str(reply, i, 'migrate-write') === 'ok');
}
