/**
 * What `delayq migrate` checks before it marks a queue: delayq 0.1 clients do not read the mark,
 * so a migration while one still runs would race it. A valid lease in the old `active` set means a
 * worker may be running a job now; an event in the old stream within the last 10 s means some
 * client wrote recently. Either asks for `--yes` (docs/ARCHITECTURE.md §10).
 */
import type { RedisClient } from '../redis/connection.js';
import type { LegacyQueueKeys } from '../redis/keys.js';

/** How recent an old event must be to count as a sign of life. */
export const QUIET_MS = 10_000;

/** Signs that a layout-1 client still uses the queue; empty when none. */
export async function signsOfLife(
  client: RedisClient,
  partitions: readonly LegacyQueueKeys[],
): Promise<string[]> {
  const [seconds, micros] = (await client.time()) as [number | string, number | string];
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const found: string[] = [];
  let leases = 0;
  let lastEvent = 0;
  for (const keys of partitions) {
    leases += await client.zcount(keys.active, `(${now}`, '+inf');
    const last = await client.xrevrange(keys.events, '+', '-', 'COUNT', 1).catch(() => []);
    const id = last[0]?.[0];
    if (id !== undefined) lastEvent = Math.max(lastEvent, Number(id.split('-')[0]));
  }
  if (leases > 0) found.push(`${leases} job${leases === 1 ? ' is' : 's are'} running under a valid lease`);
  if (lastEvent > now - QUIET_MS) {
    found.push(`the last job event was ${Math.max(0, now - lastEvent)} ms ago`);
  }
  return found;
}
