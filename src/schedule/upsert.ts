/** The `schedule-upsert` operation: store a schedule's definition and payload template. */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num, str } from '../operations/reply.js';
import { layoutRefusal } from '../operations/layout.js';
import { wheelTail, withBuckets, type Layout } from '../operations/wheel.js';
import type { StoredDefinition } from './definition.js';

/** What an upsert did: nothing (same definition), created the schedule, or replaced its definition. */
export type UpsertStatus = 'unchanged' | 'created' | 'updated';

/** Create or replace schedule `name`; returns what happened and the schedule's high-water mark. */
export async function upsertSchedule(
  client: RedisClient,
  keys: QueueKeys,
  input: { queue: string; name: string; definition: StoredDefinition; template: Buffer; layout: Layout },
): Promise<{ status: UpsertStatus; last: number }> {
  // The waiting occurrence an update takes back is in a bucket the script names when it needs it.
  const reply = asArray(
    await withBuckets(input.layout, [], (starts) => {
      const tail = wheelTail(keys, input.layout, starts);
      return runScript(
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
          keys.active,
          keys.dead,
          keys.completed,
          ...tail.keys,
        ],
        [input.name, input.definition.rev, JSON.stringify(input.definition), input.template, ...tail.args],
      ).catch((err: unknown) => {
        throw layoutRefusal(err, input.queue, input.layout);
      });
    }),
    'schedule-upsert',
  );
  return { status: str(reply, 0, 'schedule-upsert') as UpsertStatus, last: num(reply, 1, 'schedule-upsert') };
}
