/** The `schedule-read` operation (schedule-read.lua): due schedules for the schedulers, or all of them for schedules(). */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, bytes, num, str } from './reply.js';

/** One schedule as stored: its high-water mark, definition (JSON, parsed by the user) and payload template. */
export interface ScheduleEntry {
  name: string;
  /** Due time of the last occurrence added (or the time from which occurrences count). */
  last: number;
  definitionJson: string;
  template: Buffer;
}

/** A snapshot, with the server clock and the earliest high-water mark of all schedules (-1: none). */
export interface ReadOutput {
  now: number;
  head: number;
  entries: ScheduleEntry[];
}

/** Which schedules to read. */
export type ReadQuery = { mode: 'due'; limit: number } | { mode: 'all' } | { mode: 'one'; name: string };

/** Read schedules in one consistent snapshot. */
export async function readSchedules(
  client: RedisClient,
  keys: QueueKeys,
  query: ReadQuery,
): Promise<ReadOutput> {
  const args: Array<string | number> = [query.mode];
  if (query.mode === 'due') args.push(query.limit);
  if (query.mode === 'one') args.push(query.name);
  const reply = asArray(
    await runScript(
      client,
      script('schedule-read'),
      [keys.schedules, keys.schedulePayloads, keys.scheduleLast],
      args,
    ),
    'schedule-read',
  );
  const n = num(reply, 2, 'schedule-read');
  const entries: ScheduleEntry[] = [];
  for (let i = 0; i < n; i++) {
    const base = 3 + 4 * i;
    entries.push({
      name: str(reply, base, 'schedule-read'),
      last: num(reply, base + 1, 'schedule-read'),
      definitionJson: str(reply, base + 2, 'schedule-read'),
      template: bytes(reply, base + 3, 'schedule-read'),
    });
  }
  return { now: num(reply, 0, 'schedule-read'), head: num(reply, 1, 'schedule-read'), entries };
}
