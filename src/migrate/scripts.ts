/**
 * Typed wrappers of the migrate-*.lua scripts (docs/ARCHITECTURE.md §10), one per script. Each
 * partition's scripts touch only that partition's tag, and begin/end only the config record, so a
 * migration runs on Redis Cluster too.
 */
import { UnsupportedLayoutError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import {
  configKey,
  legacyKeys,
  legacyWheelBucketKey,
  type LegacyQueueKeys,
  type QueueKeys,
} from '../redis/keys.js';
import { ScriptMigrating } from '../redis/script-errors.js';
import { runScript, script, type Reply } from '../redis/scripts.js';
import { asArray, num, optionalStr, str } from '../operations/reply.js';
import type { Conversion } from './convert.js';
import type { LegacyJob } from './legacy-job.js';

/** The layout-1 and layout-2 keys of one partition. */
export interface PartitionKeys {
  readonly old: LegacyQueueKeys;
  readonly current: QueueKeys;
}

/** What the config record gets at begin where it lacks a field (a queue from before the record). */
export interface BeginDefaults {
  readonly layout: string;
  readonly partitions: number;
  readonly codec: string;
  readonly events: string;
}

/** migrate-begin's answer: 'done' when the queue is in layout 2 already. */
export type Begun =
  | { readonly status: 'begun' | 'resumed'; readonly now: number; readonly mark: string }
  | { readonly status: 'done'; readonly now: number };

/**
 * Mark queue `queue` as being migrated by `who` (migrate-begin.lua). Throws UnsupportedLayoutError
 * naming the other migration when one is marked and `resume` is false.
 */
export async function beginMigration(
  client: RedisClient,
  queue: string,
  who: string,
  resume: boolean,
  defaults: BeginDefaults,
): Promise<Begun> {
  let reply: Reply[];
  try {
    reply = asArray(
      await runScript(
        client,
        script('migrate-begin'),
        [configKey(queue)],
        [
          who,
          resume ? '1' : '0',
          defaults.layout,
          String(defaults.partitions),
          defaults.codec,
          defaults.events,
        ],
      ),
      'migrate-begin',
    );
  } catch (err) {
    if (err instanceof ScriptMigrating) {
      throw new UnsupportedLayoutError(queue, 1, { since: err.since, by: err.by });
    }
    throw err;
  }
  const status = str(reply, 0, 'migrate-begin');
  const now = num(reply, 1, 'migrate-begin');
  if (status === 'done') return { status, now };
  if (status !== 'begun' && status !== 'resumed')
    throw new Error(`migrate-begin: unexpected status ${status}`);
  return { status, now, mark: str(reply, 2, 'migrate-begin') };
}

/** Where migrate-read takes ids from. */
export type Phase = 'active' | 'dead' | 'completed' | 'schedule' | 'jobs' | 'done' | 'cancelled';

/** Phases in the order a migration runs them: the states a job can only leave by a claim or ack first. */
export const PHASES: readonly Phase[] = [
  'active',
  'dead',
  'completed',
  'schedule',
  'jobs',
  'done',
  'cancelled',
];

/** Fields migrate-read returns per id. */
const PER_ID = 12;

/** The layout-1 keys that hold a job, in the order migrate-read, -write and -seal take them first. */
function legacyJobKeys(o: PartitionKeys['old']): string[] {
  return [o.schedule, o.jobs, o.meta, o.active, o.leases, o.dead, o.errors, o.completed, o.done];
}

/** One chunk of a layout-1 partition (migrate-read.lua), and the cursor to read the next from. */
export async function readChunk(
  client: RedisClient,
  keys: PartitionKeys,
  phase: Phase,
  cursor: string,
  chunk: number,
): Promise<{ next: string; jobs: LegacyJob[] }> {
  const o = keys.old;
  const reply = asArray(
    await runScript(
      client,
      script('migrate-read'),
      [...legacyJobKeys(o), keys.current.cancelled, keys.current.records],
      [phase, cursor, chunk],
    ),
    'migrate-read',
  );
  const next = str(reply, 0, 'migrate-read');
  const count = num(reply, 1, 'migrate-read');
  const jobs: LegacyJob[] = [];
  for (let i = 0; i < count; i++) {
    const b = 2 + i * PER_ID;
    const score = (k: number): number | null => {
      const text = optionalStr(reply, b + k);
      return text === null ? null : Number(text);
    };
    const envelope = reply[b + 1];
    jobs.push({
      id: str(reply, b, 'migrate-read'),
      envelope: Buffer.isBuffer(envelope) ? envelope : null,
      meta: optionalStr(reply, b + 2),
      lease: optionalStr(reply, b + 3),
      error: optionalStr(reply, b + 4),
      due: score(5),
      deadline: score(6),
      died: score(7),
      completed: score(8),
      done: score(9),
      cancelled: score(10),
      hasRecord: num(reply, b + 11, 'migrate-read') === 1,
    });
  }
  return { next, jobs };
}

/** Apply `conversions` (migrate-write.lua); per job true when written, false when it changed since the read. */
export async function writeChunk(
  client: RedisClient,
  keys: PartitionKeys,
  conversions: readonly Conversion[],
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

/** migrate-seal's answer: sealed, or the layout-1 key that still holds entries. */
export type Sealed =
  { readonly sealed: true } | { readonly sealed: false; readonly key: string; readonly entries: number };

/** Close one partition once its layout-1 job keys are empty (migrate-seal.lua). */
export async function sealPartition(client: RedisClient, keys: PartitionKeys): Promise<Sealed> {
  const o = keys.old;
  const c = keys.current;
  // A layout-1 wheel queue's bucket lists, by the index that names them.
  const buckets = (await client.zrange(o.wheel, 0, -1)).map((start) =>
    legacyWheelBucketKey(o, Number(start)),
  );
  const reply = asArray(
    await runScript(
      client,
      script('migrate-seal'),
      [
        ...legacyJobKeys(o),
        o.token,
        o.layout,
        o.events,
        c.events,
        c.waiting,
        c.wake,
        o.limiter,
        o.ready,
        o.wheel,
        o.wheelCount,
        ...buckets,
      ],
      [],
    ),
    'migrate-seal',
  );
  if (str(reply, 0, 'migrate-seal') === 'sealed') return { sealed: true };
  return { sealed: false, key: str(reply, 1, 'migrate-seal'), entries: num(reply, 2, 'migrate-seal') };
}

/** Record format 2 and lift the mark (migrate-end.lua); throws when another run holds the mark. */
export async function endMigration(client: RedisClient, queue: string, mark: string): Promise<void> {
  const own = legacyKeys(queue);
  try {
    await runScript(client, script('migrate-end'), [configKey(queue), own.layout, own.partitions], [mark]);
  } catch (err) {
    if (err instanceof ScriptMigrating) {
      throw new UnsupportedLayoutError(queue, 1, { since: err.since, by: err.by });
    }
    throw err;
  }
}

/** One repeating schedule's template re-encoded, for migrate-templates.lua. */
export interface TemplateConversion {
  readonly name: string;
  readonly oldDefinition: string;
  readonly oldTemplate: Buffer;
  readonly definition: string;
  readonly template: Buffer;
}

/** Write re-encoded schedule templates; per schedule true when written, false when it changed since the read. */
export async function writeTemplates(
  client: RedisClient,
  keys: QueueKeys,
  conversions: readonly TemplateConversion[],
): Promise<boolean[]> {
  if (conversions.length === 0) return [];
  const reply = asArray(
    await runScript(
      client,
      script('migrate-templates'),
      [keys.schedules, keys.schedulePayloads],
      [
        conversions.length,
        ...conversions.flatMap((t) => [t.name, t.oldDefinition, t.oldTemplate, t.definition, t.template]),
      ],
    ),
    'migrate-templates',
  );
  return conversions.map((_, i) => str(reply, i, 'migrate-templates') === 'ok');
}
