/** The `schedule-upsert` operation (schedule-upsert.lua): store a schedule's definition and payload template. */
import type { RedisClient } from '../redis/connection.js';
import { configKey, type QueueKeys } from '../redis/keys.js';
import { asArray, num, str } from './reply.js';
import { waitingKeys } from './waiting-keys.js';
import { layoutRefusal, runWheelAware, type Layout } from './wheel.js';

/** What an upsert did: nothing (same definition), created the schedule, or replaced its definition. */
export type UpsertStatus = 'unchanged' | 'created' | 'updated';

/**
 * Create or replace schedule `name` with its stored definition (`definition`, JSON, whose digest is
 * `rev`; src/schedule/definition.ts) and payload template; returns what happened and the
 * schedule's high-water mark.
 */
export async function upsertSchedule(
  client: RedisClient,
  keys: QueueKeys,
  input: { queue: string; name: string; rev: string; definition: string; template: Buffer; layout: Layout },
): Promise<{ status: UpsertStatus; last: number }> {
  // The waiting occurrence an update takes back is in a bucket the script names when it needs it.
  const reply = asArray(
    await runWheelAware(client, 'schedule-upsert', keys, input.layout, [], {
      keys: [
        keys.schedules,
        keys.schedulePayloads,
        keys.scheduleLast,
        keys.scheduleWake,
        configKey(input.queue),
        ...waitingKeys(keys),
        keys.records,
        keys.errors,
      ],
      args: [input.name, input.rev, input.definition, input.template],
    }).catch((err: unknown) => {
      throw layoutRefusal(err, input.queue, input.layout);
    }),
    'schedule-upsert',
  );
  return { status: str(reply, 0, 'schedule-upsert') as UpsertStatus, last: num(reply, 1, 'schedule-upsert') };
}
