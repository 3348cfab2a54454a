/**
 * Repeating schedules through `delayq migrate` (docs/ARCHITECTURE.md §10 step 3): each payload
 * template is re-encoded from a v1 envelope to payload bytes, and its definition's rev recomputed
 * over the new bytes, so declaring the same schedule again after the migration still changes
 * nothing. Names and high-water marks are kept: no occurrence is added twice.
 */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { DEFINITION_FORMAT, withRev, type StoredDefinition } from '../schedule/definition.js';
import { writeTemplates, type TemplateConversion } from '../operations/migrate-templates.js';

/**
 * Re-encodes schedule `name`'s v1 template envelope as layout 2 stores templates (the payload
 * bytes), with the envelope's payload version, which layout 2 keeps in the definition; throws when
 * it cannot.
 */
export type TemplateConverter = (template: Buffer, name: string) => { template: Buffer; version: number };

/** What became of the schedules. */
export interface TemplatesReport {
  readonly converted: number;
  /** Schedules left as they were, with the reason (their template no longer decodes). */
  readonly problems: ReadonlyArray<{ readonly name: string; readonly reason: string }>;
}

/** Attempts per schedule before a migration gives up on one that keeps being upserted. */
const ATTEMPTS = 5;

/** Convert every schedule of `keys` (the queue's first partition); with `dryRun`, only report. */
export async function migrateTemplates(
  client: RedisClient,
  keys: QueueKeys,
  convert: TemplateConverter,
  dryRun: boolean,
): Promise<TemplatesReport> {
  let converted = 0;
  const problems: Array<{ name: string; reason: string }> = [];
  let pending: string[] | null = null;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const definitions = await client.hgetall(keys.schedules);
    const templates = await client.hgetallBuffer(keys.schedulePayloads);
    const conversions: TemplateConversion[] = [];
    for (const [name, oldDefinition] of Object.entries(definitions)) {
      if (pending !== null && !pending.includes(name)) continue;
      const oldTemplate = templates[name];
      if (oldTemplate === undefined) continue;
      try {
        const { template, version } = convert(oldTemplate, name);
        conversions.push({
          name,
          oldDefinition,
          oldTemplate,
          definition: revised(oldDefinition, version, template),
          template,
        });
      } catch (err) {
        problems.push({ name, reason: err instanceof Error ? err.message : String(err) });
      }
    }
    if (dryRun) return { converted: conversions.length, problems };
    const written = await writeTemplates(client, keys, conversions);
    converted += written.filter(Boolean).length;
    pending = conversions.filter((_, i) => !written[i]).map((t) => t.name);
    if (pending.length === 0) return { converted, problems };
  }
  throw new Error(
    `schedules ${pending!.join(', ')} changed ${ATTEMPTS} times while being converted: stop every delayq 0.1 client (Scheduler included) and run delayq migrate again with --resume`,
  );
}

/**
 * 0.1's stored `definition` (JSON, format 1) as layout 2 stores it: format DEFINITION_FORMAT, the
 * template's payload `version`, its rev computed over the new `template`. The keys are in the order
 * resolveScheduleOptions() writes them, so declaring the same schedule again finds the same rev and
 * changes nothing.
 */
function revised(definition: string, version: number, template: Buffer): string {
  const old = JSON.parse(definition) as Omit<StoredDefinition, 'v' | 'version'>;
  const next: Omit<StoredDefinition, 'rev'> = {
    v: DEFINITION_FORMAT,
    spec: old.spec,
    missed: old.missed,
    grace: old.grace,
    m: old.m,
    version,
  };
  if (old.b !== undefined) next.b = old.b;
  if (old.o !== undefined) next.o = old.o;
  return JSON.stringify(withRev(next, template));
}
