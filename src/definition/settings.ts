/**
 * The two halves of a queue's config record (docs/PROTOCOL.md): what may never change once
 * recorded (a job written under one value is lost or unreadable under another), and the live
 * settings, which `queue.configure()` changes on a running queue and every worker follows.
 */
import { describe, type Duration } from '../duration.js';
import { ValidationError } from '../errors.js';
import type { LiveField } from '../operations/config-record.js';
import { resolveGroups } from './definition.js';

/**
 * Fields fixed at the queue's first use: the data format, where waiting jobs live (layout), the
 * partitions, the codec and the events cap. A client that differs gets ConfigMismatchError.
 */
export const FIXED_FIELDS = ['format', 'layout', 'partitions', 'codec', 'events'] as const;

/** What `queue.configure()` takes. */
export interface ConfigureOptions {
  /** The group bounds: running jobs per group across all workers, and its rate limit (null: none). */
  groups?: {
    concurrency?: number;
    limit?: { max: number; per: Duration } | null;
  };
}

const CONFIGURE_KEYS = ['groups'];
const GROUPS_KEYS = ['concurrency', 'limit'];

/**
 * Validate `options` into the live fields to write, as config.lua records them. Throws
 * ValidationError naming the wrong key or value and what to write instead.
 */
export function resolveConfigure(options: unknown): Partial<Record<LiveField, string>> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(
      `configure takes { groups: { concurrency?, limit? } }, got ${describe(options)}`,
      'options',
    );
  }
  const o = options as Record<string, unknown>;
  refuseUnknown(o, CONFIGURE_KEYS, '');
  if (o['groups'] === undefined) {
    throw new ValidationError(
      'configure needs something to change: write configure({ groups: { concurrency: 3 } }) (or limit)',
      'groups',
    );
  }
  const groups = o['groups'];
  if (typeof groups !== 'object' || groups === null || Array.isArray(groups)) {
    throw new ValidationError(`groups must be { concurrency?, limit? }, got ${describe(groups)}`, 'groups');
  }
  const g = groups as Record<string, unknown>;
  refuseUnknown(g, GROUPS_KEYS, 'groups.');
  if (g['concurrency'] === undefined && g['limit'] === undefined) {
    throw new ValidationError(
      'configure({ groups }) needs concurrency or limit: write { groups: { concurrency: 3 } } or { groups: { limit: { max: 10, per: "1s" } } }',
      'groups',
    );
  }
  // One validation of the bounds for the Worker option and for configure (definition.ts).
  const merged = resolveGroups({
    concurrency: g['concurrency'] ?? 1,
    ...(g['limit'] !== undefined && g['limit'] !== null && { limit: g['limit'] }),
  });
  const out: Partial<Record<LiveField, string>> = {};
  if (g['concurrency'] !== undefined) out['groups.concurrency'] = String(merged.concurrency);
  if (g['limit'] !== undefined) {
    out['groups.limit'] = merged.limit ? `${merged.limit.max}/${merged.limit.perMs}` : 'none';
  }
  return out;
}

function refuseUnknown(o: Record<string, unknown>, known: readonly string[], prefix: string): void {
  for (const key of Object.keys(o)) {
    if (!known.includes(key)) {
      throw new ValidationError(
        `unknown configure option '${prefix}${key}'; known: ${known.map((k) => prefix + k).join(', ')} (the other settings of a queue cannot change once recorded)`,
        `${prefix}${key}`,
      );
    }
  }
}

/** `value` of live field `field` as a person writes it in options. */
export function describeLive(field: LiveField, value: string): string {
  if (field === 'groups.concurrency') return value;
  const rate = /^(\d+)\/(\d+)$/.exec(value);
  return rate ? `{ max: ${rate[1]}, per: ${rate[2]} }` : 'none';
}
