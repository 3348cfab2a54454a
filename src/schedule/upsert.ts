/** The `schedule-upsert` operation: store a schedule's definition and payload template. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num, str } from '../operations/reply.js';
import type { StoredDefinition } from './definition.js';

/** What an upsert did: nothing (same definition), created the schedule, or replaced its definition. */
export type UpsertStatus = 'unchanged' | 'created' | 'updated';

/** Create or replace schedule `name`; returns what happened and the schedule's high-water mark. */
export async function upsertSchedule(
  client: RedisClient,
  keys: QueueKeys,
  input: { name: string; definition: StoredDefinition; template: Buffer },
): Promise<{ status: UpsertStatus; last: number }> {
  const reply = asArray(
    await runScript(
      client,
      script('schedule-upsert'),
      [
        keys.schedules,
        keys.schedulePayloads,
        keys.scheduleLast,
        keys.schedule,
        keys.jobs,
        keys.meta,
        keys.scheduleWake,
        keys.layout,
      ],
      [input.name, input.definition.rev, JSON.stringify(input.definition), input.template],
    ),
    'schedule-upsert',
  );
  return { status: str(reply, 0, 'schedule-upsert') as UpsertStatus, last: num(reply, 1, 'schedule-upsert') };
}
