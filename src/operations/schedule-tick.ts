/**
 * The `schedule-tick` operation (schedule-tick.lua): add those of a schedule's candidate
 * occurrences that are neither missed nor already added, each as the schedule's one occurrence
 * record. The script decides by the server clock and a compare-and-set on the schedule's
 * high-water mark, so racing callers cannot add an occurrence twice. src/schedule/tick.ts picks
 * the candidates.
 */
import type { RedisClient } from '../redis/connection.js';
import { configKey, type QueueKeys } from '../redis/keys.js';
import { asArray, num, str } from './reply.js';
import { waitingKeys } from './waiting-keys.js';
import { guessAt, layoutRefusal, runWheelAware, type Layout } from './wheel.js';

/** One schedule-tick call's question: the schedule as read, and the occurrences to offer. */
export interface TickInput {
  name: string;
  /** The definition's digest the caller read: a changed definition makes the call stale. */
  rev: string;
  /** The high-water mark the caller read (the compare-and-set). */
  expectedLast: number;
  grace: number;
  missed: string;
  eventsCap: number;
  /** The occurrence record every occurrence gets. */
  record: Buffer;
  /** Candidate due times, ascending, all after expectedLast. */
  due: readonly number[];
}

/** What one schedule-tick call did. */
export interface TickOutput {
  /** 'more': occurrences remain to offer from `last`, as of `now`. */
  status: 'done' | 'more' | 'stale' | 'gone';
  last: number;
  /** The server's now, in the script. */
  now: number;
  /** Occurrences added, by due time (created false: a job with that id existed, nothing written). */
  added: Array<{ runAt: number; created: boolean }>;
}

/** One schedule-tick call on queue `queue` (its name, for the config record and refusals). */
export async function scheduleTick(
  client: RedisClient,
  keys: QueueKeys,
  queue: string,
  layout: Layout,
  input: TickInput,
): Promise<TickOutput> {
  const args: Array<string | number | Buffer> = [
    input.name,
    input.rev,
    input.expectedLast,
    input.grace,
    input.missed,
    input.eventsCap,
    input.record,
    input.due.length,
    ...input.due,
  ];
  const guess = layout.kind === 'wheel' ? input.due.flatMap((t) => guessAt(layout, t)) : [];
  const reply = asArray(
    await runWheelAware(client, 'schedule-tick', keys, layout, guess, {
      keys: [
        ...waitingKeys(keys),
        keys.records,
        keys.wake,
        keys.counters,
        keys.events,
        keys.schedules,
        keys.scheduleLast,
        keys.scheduleWake,
        configKey(queue),
      ],
      args,
    }).catch((err: unknown) => {
      throw layoutRefusal(err, queue, layout);
    }),
    'schedule-tick',
  );
  const added: TickOutput['added'] = [];
  const n = num(reply, 3, 'schedule-tick');
  for (let i = 0; i < n; i++) {
    added.push({
      runAt: num(reply, 4 + 2 * i, 'schedule-tick'),
      created: num(reply, 5 + 2 * i, 'schedule-tick') === 1,
    });
  }
  return {
    status: str(reply, 0, 'schedule-tick') as TickOutput['status'],
    last: num(reply, 1, 'schedule-tick'),
    now: num(reply, 2, 'schedule-tick'),
    added,
  };
}
