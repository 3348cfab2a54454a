/**
 * queue.schedule / queue.unschedule / queue.schedules, as functions of a Queue's producer (the
 * Queue methods delegate here), so a schedule's jobs are encoded exactly as the queue's own adds.
 */
import type { BackoffSpec } from '../backoff.js';
import type { Producer } from '../definition/producer.js';
import { validatePayload } from '../schema.js';
import {
  assertScheduleName,
  parseDefinition,
  resolveScheduleOptions,
  withRev,
  type MissedPolicy,
  type ScheduleOptions,
} from './definition.js';
import { decodeTemplate, encodeTemplate } from './occurrence.js';
import { readSchedules } from '../operations/schedule-read.js';
import { removeSchedule } from '../operations/schedule-remove.js';
import { resolveSpec, timetableOf, type ResolvedSpec, type ScheduleSpec } from './spec.js';
import { advanceSchedule, type TickContext } from './tick.js';
import { upsertSchedule, type UpsertStatus } from '../operations/schedule-upsert.js';

/** What queue.schedule resolves to. */
export interface ScheduleResult {
  name: string;
  /** 'unchanged' when the same definition and payload were already stored: nothing was written. */
  status: UpsertStatus;
  /**
   * When the first occurrence of this definition is due (for an unchanged one: the occurrence
   * waiting now). Its job is in the queue by the time schedule() resolves.
   */
  next: Date;
}

/** A stored schedule, as queue.schedules() lists it. */
export interface ScheduleInfo<T> {
  name: string;
  /** The spec, with `every` in ms. */
  spec: ResolvedSpec;
  /** The payload each occurrence gets; undefined only when it could not be decoded (see decodeError). */
  payload: T | undefined;
  decodeError?: string;
  missed: MissedPolicy;
  /** Grace in ms. */
  grace: number;
  attempts: number;
  backoff?: BackoffSpec;
  /** Timeout of each attempt of each occurrence's job, ms. */
  timeoutMs?: number;
  /** When the next occurrence is due: already a job when in the future. */
  next: Date | null;
}

/**
 * Create or replace the repeating schedule `name` of `queue`, and add its first occurrence's job.
 * Declaring the same schedule again (same spec, payload and options) changes nothing, so every
 * process may declare its schedules at start-up. Throws ValidationError, EncodeError or
 * PayloadTooLargeError, writing nothing.
 */
export async function schedule<T>(
  producer: Producer<T>,
  name: string,
  spec: ScheduleSpec,
  payload: T,
  opts?: ScheduleOptions,
): Promise<ScheduleResult> {
  producer.assertOpen();
  assertScheduleName(name);
  const where = `schedule '${name}'`;
  const resolved = resolveSpec(spec, where);
  const queue = producer.context;
  const definition = resolveScheduleOptions(
    resolved,
    opts,
    { ...producer.jobDefaults, version: queue.definition.version },
    where,
  );
  if (producer.schema) await validatePayload(producer.schema, payload);
  const { codec, layout } = await queue.settle();
  // Over the size limit fails now, not at every occurrence: each job's payload is these bytes.
  const template = encodeTemplate(codec, name, payload, producer.maxPayloadBytes);
  const stored = withRev(definition, template);
  const upserted = await upsertSchedule(queue.client, queue.keys, {
    queue: queue.name,
    name,
    rev: stored.rev,
    definition: JSON.stringify(stored),
    template,
    layout,
  });
  // Add the first occurrence now rather than at some scheduler's next round.
  const context: TickContext = { queue, records: new Map() };
  let read = await readSchedules(queue.client, queue.keys, { mode: 'one', name });
  let entry = read.entries[0];
  if (entry && entry.last <= read.now) {
    const out = await advanceSchedule(context, entry, read.now);
    if (out.outcome !== 'done') {
      read = await readSchedules(queue.client, queue.keys, { mode: 'one', name });
      entry = read.entries[0];
    } else {
      entry = { ...entry, last: out.last };
    }
  }
  if (!entry) throw new Error(`${where} was removed while it was being declared`);
  // A new definition's first occurrence is the first after the mark the upsert set (added by the
  // step above, or by a scheduler that got there first); an unchanged one's is its waiting job.
  const next =
    upserted.status === 'unchanged' ? entry.last : (timetableOf(resolved).next(upserted.last) ?? entry.last);
  return { name, status: upserted.status, next: new Date(next) };
}

/** Remove schedule `name` and its waiting next occurrence; false when there was no such schedule. */
export async function unschedule<T>(producer: Producer<T>, name: string): Promise<boolean> {
  producer.assertOpen();
  assertScheduleName(name);
  const queue = producer.context;
  return removeSchedule(queue.client, queue.keys, name, (await queue.settle()).layout);
}

/** Every schedule of `queue`, the one due next first. */
export async function schedules<T>(producer: Producer<T>): Promise<Array<ScheduleInfo<T>>> {
  producer.assertOpen();
  const queue = producer.context;
  const { codec } = await queue.settle();
  const read = await readSchedules(queue.client, queue.keys, { mode: 'all' });
  return read.entries.map((entry) => {
    const definition = parseDefinition(entry.definitionJson, entry.name);
    let payload: T | undefined;
    let decodeError: string | undefined;
    try {
      payload = decodeTemplate(codec, entry.name, entry.template) as T;
    } catch (err) {
      decodeError = err instanceof Error ? err.message : String(err);
    }
    const next = entry.last > read.now ? entry.last : timetableOf(definition.spec).next(read.now);
    const info: ScheduleInfo<T> = {
      name: entry.name,
      spec: definition.spec,
      payload,
      missed: definition.missed,
      grace: definition.grace,
      attempts: definition.m,
      next: next === null ? null : new Date(next),
    };
    if (decodeError !== undefined) info.decodeError = decodeError;
    if (definition.b !== undefined) info.backoff = definition.b;
    if (definition.o !== undefined) info.timeoutMs = definition.o;
    return info;
  });
}
