/**
 * The one step every scheduler (and queue.schedule) takes for a schedule whose last occurrence is
 * due: compute the candidate occurrences after its high-water mark with the schedule's timetable,
 * and let schedule-tick.lua (src/operations/schedule-tick.ts) add those that are neither missed nor
 * already added, each as the schedule's one occurrence record (occurrence.ts). The script decides
 * by the server clock and a compare-and-set on the mark, so racing callers cannot add an
 * occurrence twice.
 */
import type { QueueContext } from '../definition/context.js';
import type { ScheduleEntry } from '../operations/schedule-read.js';
import { scheduleTick } from '../operations/schedule-tick.js';
import { producerOf } from '../definition/producer.js';
import { parseDefinition, type StoredDefinition } from './definition.js';
import { occurrenceId, occurrenceRecord } from './occurrence.js';
import { timetableOf, type Timetable } from './spec.js';

/** Candidates per script call: enough for a second of grace at the shortest period. */
const MAX_CANDIDATES = 40;
/** Candidates after the caller's "now", so one is still ahead by the time the script runs. */
const AHEAD = 2;
/** Script calls per advance before leaving the rest to the next round (only a huge grace needs more than one). */
const MAX_STEPS = 20;

/** A job an advance added (created false: a job with that id already existed, nothing was written). */
export interface AddedOccurrence {
  schedule: string;
  id: string;
  runAt: number;
  created: boolean;
}

/** What one advance of one schedule did. */
export interface AdvanceResult {
  /**
   * 'done': the next occurrence after now is added. 'stale': another caller moved the mark (or
   * changed the definition) first; nothing written. 'gone': the schedule was removed. 'more':
   * stopped after MAX_STEPS script calls, to go on in the next round.
   */
  outcome: 'done' | 'stale' | 'gone' | 'more';
  /** The schedule's high-water mark afterwards (as last seen). */
  last: number;
  added: AddedOccurrence[];
}

/** What advancing needs: where the occurrences go. */
export interface TickContext {
  /** The queue: its keys, and once settled its events cap and layout (occurrences go there too). */
  queue: QueueContext;
  /** Occurrence records by schedule name and rev, so a record is built once per definition. */
  records: Map<string, { rev: string; record: Buffer }>;
}

/**
 * Add the occurrences of `entry` that are due to be added, as of `now` (server clock, from the
 * read that produced `entry`).
 */
export async function advanceSchedule(
  ctx: TickContext,
  entry: ScheduleEntry,
  now: number,
): Promise<AdvanceResult> {
  const definition = parseDefinition(entry.definitionJson, entry.name);
  const record = recordOf(ctx, entry, definition);
  const timetable = timetableOf(definition.spec);
  const added: AddedOccurrence[] = [];
  let last = entry.last;
  let at = now;
  for (let step = 0; step < MAX_STEPS; step++) {
    const due = candidates(timetable, last, at, definition.grace);
    if (due.length === 0) {
      throw new Error(
        `schedule '${entry.name}': its timetable has no occurrence after ${new Date(last).toISOString()}`,
      );
    }
    const { eventsCap, layout } = await ctx.queue.settle();
    const { client, keys, name } = ctx.queue;
    const out = await scheduleTick(client, keys, name, layout, {
      name: entry.name,
      rev: definition.rev,
      expectedLast: last,
      grace: definition.grace,
      missed: definition.missed,
      eventsCap,
      record,
      due,
    });
    for (const { runAt, created } of out.added) {
      added.push({ schedule: entry.name, id: occurrenceId(entry.name, runAt), runAt, created });
    }
    if (out.status !== 'more') return { outcome: out.status, last: out.last, added };
    last = out.last;
    at = out.now;
  }
  return { outcome: 'more', last, added };
}

/**
 * Occurrences to offer the script: the latest one older than the grace (the missed one 'runOnce'
 * would run), then every one from there on until AHEAD of them lie after `now`. All are after
 * `last`, ascending, with none left out between them.
 */
export function candidates(timetable: Timetable, last: number, now: number, grace: number): number[] {
  const out: number[] = [];
  const missedBefore = now - grace;
  const missed = timetable.latestAtOrBefore(missedBefore - 1);
  if (missed !== null && missed > last) out.push(missed);
  let t = timetable.next(Math.max(last, missedBefore - 1));
  let ahead = 0;
  while (t !== null && out.length < MAX_CANDIDATES) {
    out.push(t);
    if (t > now && ++ahead >= AHEAD) break;
    t = timetable.next(t);
  }
  return out;
}

function recordOf(ctx: TickContext, entry: ScheduleEntry, definition: StoredDefinition): Buffer {
  const cached = ctx.records.get(entry.name);
  if (cached?.rev === definition.rev) return cached.record;
  const record = occurrenceRecord(definition, entry.template);
  ctx.records.set(entry.name, { rev: definition.rev, record });
  return record;
}

/** What advancing a schedule of `queue` (a Queue) needs, with a fresh record cache. */
export function tickContextOf(queue: object): TickContext {
  return { queue: producerOf(queue).context, records: new Map() };
}
