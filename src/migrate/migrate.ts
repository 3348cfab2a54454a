/**
 * `delayq migrate`: convert a layout-1 queue (delayq 0.1) to layout 2 in place
 * (docs/ARCHITECTURE.md §10). Per partition and per phase, chunks of ids are read
 * (migrate-read.lua), converted here (the v1 envelope decoded with the queue's codec, the record
 * built), and written with a compare-and-set per job (migrate-write.lua), which deletes the old
 * entries. Every set is drained as it goes, so the sets themselves are the cursor: a migration that
 * stops anywhere resumes (`--resume`) where it was, and no job is converted twice.
 */
import { DelayqError, UnknownQueueError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { configKey, legacyKeys, partitionKeys } from '../redis/keys.js';
import { convertJob, type Conversion, type PayloadConverter, type Target } from './convert.js';
import { beginMigration } from '../operations/migrate-begin.js';
import { endMigration } from '../operations/migrate-end.js';
import type { PartitionKeys } from '../operations/migrate-keys.js';
import { readChunk, type LegacyJob, type Phase } from '../operations/migrate-read.js';
import { sealPartition } from '../operations/migrate-seal.js';
import { writeChunk } from '../operations/migrate-write.js';
import { signsOfLife } from './preflight.js';
import { migrateTemplates, type TemplateConverter, type TemplatesReport } from './templates.js';

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

/** Ids per chunk: one script call reads them and one writes them. */
export const DEFAULT_CHUNK = 500;

/** Times one job may be found changed (a layout-1 client touched it) before the migration stops. */
const MAX_CHANGES = 5;

/** How a migration runs. */
export interface MigrateOptions {
  /** Who migrates, shown to every client refused meanwhile (host and process). */
  readonly who: string;
  /** Take over a migration that stopped (its mark is still set). */
  readonly resume: boolean;
  /** Read and convert everything, write nothing: what a migration would do. */
  readonly dryRun: boolean;
  /** Go on although a delayq 0.1 client seems to still use the queue (preflight). */
  readonly yes: boolean;
  readonly payloads: PayloadConverter;
  readonly templates: TemplateConverter;
  readonly chunk?: number;
  /** Called after every chunk. */
  readonly onProgress?: (progress: MigrateProgress) => void;
}

/** Where a migration is. */
export interface MigrateProgress {
  readonly partition: number;
  readonly partitions: number;
  readonly phase: Phase;
  /** Jobs converted so far (all partitions), and how many there were at the start. */
  readonly done: number;
  readonly total: number;
}

/** What a migration did (or, dry, would do). */
export interface MigrateReport {
  readonly status: 'migrated' | 'dry-run' | 'already';
  readonly partitions: number;
  /** Jobs per layout-2 state they ended in. */
  readonly jobs: Readonly<Record<'waiting' | 'active' | 'dead' | 'completed' | 'cancelled', number>>;
  /** Jobs buried because they could not be converted as they were, with the reason. */
  readonly problems: ReadonlyArray<{ readonly id: string; readonly reason: string }>;
  readonly schedules: TemplatesReport;
}

/** The preflight found a delayq 0.1 client at work and `yes` was not given; nothing was written. */
export class MigrateRefusedError extends DelayqError {
  constructor(
    readonly queue: string,
    readonly signs: readonly string[],
  ) {
    super(
      'DELAYQ_MIGRATE_REFUSED',
      `queue '${queue}' looks in use by delayq 0.1: ${signs.join('; ')}. Stop its workers, producers and schedulers first, then run delayq migrate again (or pass --yes to go on: a running job is then converted with its lease and reaped if its worker is gone)`,
    );
  }
}

const STATE_OF: Record<Exclude<Target, ''>, keyof MigrateReport['jobs']> = {
  s: 'waiting',
  a: 'active',
  d: 'dead',
  c: 'completed',
  x: 'cancelled',
};

/** Convert queue `queue` to layout 2 (or, with `dryRun`, report what that would do). */
export async function migrateQueue(
  client: RedisClient,
  queue: string,
  options: MigrateOptions,
): Promise<MigrateReport> {
  const chunk = options.chunk ?? DEFAULT_CHUNK;
  const own = legacyKeys(queue);
  const record = await client.hgetall(configKey(queue));
  const jobs = { waiting: 0, active: 0, dead: 0, completed: 0, cancelled: 0 };
  const problems: Array<{ id: string; reason: string }> = [];
  if (record.format === '2' && record.migrating === undefined) {
    return {
      status: 'already',
      partitions: Number(record.partitions ?? 1),
      jobs,
      problems,
      schedules: { converted: 0, problems: [] },
    };
  }
  const legacyPartitions = await client.get(own.partitions);
  const legacyLayout = await client.get(own.layout);
  if (record.format === undefined && legacyPartitions === null && legacyLayout === null) {
    // No record and none of 0.1's records: a queue 0.1 used has jobs in its own tag then.
    const used = (await client.exists(own.jobs, own.schedule, own.dead, own.done, own.completed)) > 0;
    if (!used) throw new UnknownQueueError(queue);
  }
  const partitionCount = Number(record.partitions ?? legacyPartitions ?? 1);
  const layout = record.layout ?? legacyLayout ?? 'zset';
  // A wheel queue's waiting jobs are in no ZSET of layout 1 (its buckets and ready list hold bare
  // ids): the 'jobs' phase finds them, and they go to `s` at their due time, which a layout-2 wheel
  // claim sweeps into ready once due.
  const current = partitionKeys(queue, partitionCount);
  const partitions: PartitionKeys[] = current.map((keys, i) => ({
    old: partitionCount === 1 ? own : legacyKeys(queue, i),
    current: keys,
  }));

  if (!options.dryRun && !options.resume && !options.yes) {
    const signs = await signsOfLife(
      client,
      partitions.map((p) => p.old),
    );
    if (signs.length > 0) throw new MigrateRefusedError(queue, signs);
  }
  let mark: string | null = null;
  if (!options.dryRun) {
    const begun = await beginMigration(client, queue, options.who, options.resume, {
      layout,
      partitions: partitionCount,
      codec: record.codec ?? 'json',
      events: record.events ?? '10000',
    });
    if (begun.status === 'done') {
      return {
        status: 'already',
        partitions: partitionCount,
        jobs,
        problems,
        schedules: { converted: 0, problems: [] },
      };
    }
    mark = begun.mark;
  }

  let total = 0;
  for (const p of partitions) {
    total +=
      (await client.hlen(p.old.jobs)) +
      (await client.zcard(p.old.done)) +
      (await client.zcard(p.current.cancelled));
  }
  let done = 0;
  for (const [index, keys] of partitions.entries()) {
    for (const phase of PHASES) {
      const changes = new Map<string, number>();
      let cursor = '0';
      for (;;) {
        const now = await serverNow(client);
        const read = await readChunk(client, keys, phase, cursor, chunk);
        // A dry run reads every set by rank, so a job is counted in its own phase only. An id
        // already converted needs nothing but its done entry gone (migrate-write keeps its record).
        const taken = read.jobs.filter(
          (job) =>
            (!options.dryRun || firstPhase(job) === phase) && !(phase === 'cancelled' && job.hasRecord),
        );
        const conversions = taken.map((job) => convertJob(job, options.payloads, now));
        const written = options.dryRun
          ? conversions.map(() => true)
          : await writeChunk(client, keys, conversions);
        conversions.forEach((conversion, i) => {
          if (written[i]) {
            // Counted once: not an id converted already (a kept completed job's done entry, an
            // id HSCAN returned twice), whose write only removed what was left of it.
            if (!taken[i]!.hasRecord && conversion.target !== '') {
              count(conversion, jobs, problems);
              done++;
            }
            return;
          }
          const times = (changes.get(conversion.id) ?? 0) + 1;
          changes.set(conversion.id, times);
          if (times >= MAX_CHANGES) {
            throw new Error(
              `job ${conversion.id} of queue '${queue}' changed ${times} times while being converted: a delayq 0.1 client still uses the queue; stop it and run delayq migrate ${queue} --resume`,
            );
          }
        });
        options.onProgress?.({ partition: index, partitions: partitionCount, phase, done, total });
        // A migration drains the sets it reads (cursor 0 again finds what is left); a dry run, and
        // the two phases whose keys are not drained, follow the cursor.
        const follows = options.dryRun || phase === 'jobs' || phase === 'cancelled';
        if (follows) {
          if (read.next === '0') break;
          cursor = read.next;
        } else if (read.jobs.length === 0) {
          break;
        }
      }
    }
  }

  const schedules = await migrateTemplates(client, partitions[0]!.current, options.templates, options.dryRun);
  if (options.dryRun) return { status: 'dry-run', partitions: partitionCount, jobs, problems, schedules };
  for (const keys of partitions) {
    const sealed = await sealPartition(client, keys);
    if (!sealed.sealed) {
      throw new Error(
        `${sealed.key} still holds ${sealed.entries} entries after the conversion: a delayq 0.1 client wrote meanwhile; stop it and run delayq migrate ${queue} --resume`,
      );
    }
  }
  await endMigration(client, queue, mark!);
  return { status: 'migrated', partitions: partitionCount, jobs, problems, schedules };
}

/** The phase a job belongs to: the first of PHASES whose set holds it (a dry run counts each job once). */
function firstPhase(job: LegacyJob): Phase {
  if (job.deadline !== null) return 'active';
  if (job.died !== null) return 'dead';
  if (job.completed !== null) return 'completed';
  if (job.due !== null) return 'schedule';
  if (job.envelope !== null) return 'jobs';
  if (job.done !== null) return 'done';
  return job.hasRecord ? 'jobs' : 'cancelled';
}

function count(
  conversion: Conversion,
  jobs: Record<keyof MigrateReport['jobs'], number>,
  problems: Array<{ id: string; reason: string }>,
): void {
  if (conversion.target !== '') jobs[STATE_OF[conversion.target]]++;
  if (conversion.problem !== null) problems.push({ id: conversion.id, reason: conversion.problem });
}

async function serverNow(client: RedisClient): Promise<number> {
  const [seconds, micros] = (await client.time()) as [number | string, number | string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
