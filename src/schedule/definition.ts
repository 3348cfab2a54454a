/**
 * A schedule's definition as stored in Redis (the `schedules` hash), and the options that make it.
 * The `rev` digest covers the definition and the encoded payload, so declaring the same schedule
 * again (every process at start-up) changes nothing, and a tick computed from an older
 * definition is refused.
 */
import { createHash } from 'node:crypto';
import { validateBackoffSpec, type BackoffSpec, type ResolvedBackoff } from '../backoff.js';
import { describe, parseDuration, parseMs, type Duration } from '../duration.js';
import { suggestOption } from '../option-names.js';
import { ValidationError } from '../errors.js';
import type { ResolvedSpec } from './spec.js';

/** What happens to occurrences that no scheduler added in time (all schedulers were down or late). */
export type MissedPolicy = 'skip' | 'runOnce';

/** Options of `queue.schedule`. */
export interface ScheduleOptions {
  /** Attempts of each occurrence's job before it goes to the dead set. Default: the queue's default. */
  attempts?: number;
  /** Wait between attempts of an occurrence's job. Default: the queue's default. */
  backoff?: BackoffSpec;
  /** Abort each attempt of an occurrence's job after this long (as add's timeoutMs). Default: none. */
  timeoutMs?: number;
  /**
   * Occurrences due more than `grace` ago when a scheduler first gets to them: 'skip' (default)
   * adds none of them; 'runOnce' adds the latest of them, once, due at its own (past) time.
   */
  missed?: MissedPolicy;
  /** How late an occurrence may still be added and run; older ones are missed. Default 1 s. */
  grace?: Duration;
}

/**
 * Format of the stored definition. 2: the payload template is the payload's bytes alone (layout 2)
 * and the definition carries its `version`; 1 (layout 1) had the template in an envelope.
 */
export const DEFINITION_FORMAT = 2;

/** The stored definition (JSON in the `schedules` hash). */
export interface StoredDefinition {
  /** Format of this record: DEFINITION_FORMAT. */
  v: typeof DEFINITION_FORMAT;
  /** Digest of everything below and of the encoded payload. */
  rev: string;
  spec: ResolvedSpec;
  missed: MissedPolicy;
  /** Grace in ms. */
  grace: number;
  /** Max attempts of each job. */
  m: number;
  /** Backoff of each job, in ms. */
  b?: ResolvedBackoff;
  /** Timeout of each attempt of each job, ms. */
  o?: number;
  /** Payload schema version of the template (the queue's `version` when it was declared). */
  version: number;
}

/** Default grace: room for a scheduler's pause (GC, event loop, failover) before an occurrence counts as missed. */
export const DEFAULT_GRACE_MS = 1_000;

const KNOWN = new Set(['attempts', 'backoff', 'timeoutMs', 'missed', 'grace']);
const MAX_NAME_LENGTH = 200;

/** Throws ValidationError unless `name` can name a schedule. */
export function assertScheduleName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw new ValidationError(
      `schedule name must be a non-empty string of at most ${MAX_NAME_LENGTH} characters, got ${describe(name)}`,
    );
  }
  if (/[\s]/.test(name)) {
    throw new ValidationError(`schedule name ${JSON.stringify(name)} may not contain white space`);
  }
}

/** Validate options into the stored definition (without rev); throws ValidationError naming the option. */
export function resolveScheduleOptions(
  spec: ResolvedSpec,
  opts: ScheduleOptions | undefined,
  defaults: { attempts: number; backoff?: ResolvedBackoff; version: number },
  where: string,
): Omit<StoredDefinition, 'rev'> {
  const o: ScheduleOptions = opts ?? {};
  if (typeof o !== 'object' || o === null || Array.isArray(o)) {
    throw new ValidationError(`${where}: options must be an object, got ${describe(o)}`, 'opts');
  }
  for (const key of Object.keys(o)) {
    if (!KNOWN.has(key)) {
      throw new ValidationError(
        `${where}: unknown schedule option '${key}'${suggestOption(key, KNOWN)}; known options: ${[...KNOWN].join(', ')}`,
        key,
      );
    }
  }
  const attempts = o.attempts ?? defaults.attempts;
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new ValidationError(
      `${where}: attempts must be a whole number >= 1, got ${describe(attempts)}`,
      'attempts',
    );
  }
  const missed = o.missed ?? 'skip';
  if (missed !== 'skip' && missed !== 'runOnce') {
    throw new ValidationError(
      `${where}: missed must be 'skip' or 'runOnce', got ${describe(missed)}`,
      'missed',
    );
  }
  const grace = o.grace === undefined ? DEFAULT_GRACE_MS : parseDuration(o.grace, `${where}: grace`, 'grace');
  const backoff =
    o.backoff === undefined
      ? defaults.backoff
      : validateBackoffSpec(o.backoff, `${where}: backoff`, 'backoff');
  const definition: Omit<StoredDefinition, 'rev'> = {
    v: DEFINITION_FORMAT,
    spec,
    missed,
    grace,
    m: attempts,
    version: defaults.version,
  };
  if (backoff !== undefined) definition.b = backoff;
  if (o.timeoutMs !== undefined) {
    const timeoutMs = parseMs(o.timeoutMs, `${where}: timeoutMs`, 'timeoutMs');
    if (timeoutMs < 1) throw new ValidationError(`${where}: timeoutMs must be at least 1 ms`, 'timeoutMs');
    definition.o = timeoutMs;
  }
  return definition;
}

/** The definition with its digest over the definition and the encoded payload. */
export function withRev(definition: Omit<StoredDefinition, 'rev'>, payload: Buffer): StoredDefinition {
  const rev = createHash('sha1')
    .update(JSON.stringify(definition))
    .update(payload)
    .digest('hex')
    .slice(0, 20);
  return { ...definition, rev };
}

/** Parse a stored definition; a malformed record is an error, never a default. */
export function parseDefinition(json: string, name: string): StoredDefinition {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new Error(`schedule '${name}': stored definition is not JSON: ${json.slice(0, 200)}`);
  }
  const d = value as (Omit<Partial<StoredDefinition>, 'v'> & { v?: unknown }) | null;
  if (typeof d === 'object' && d !== null && d.v === 1) {
    throw new Error(
      `schedule '${name}' was stored by a delayq before layout 2 (its payload template is an envelope); run \`delayq migrate\` on the queue`,
    );
  }
  if (
    typeof d !== 'object' ||
    d === null ||
    d.v !== DEFINITION_FORMAT ||
    typeof d.rev !== 'string' ||
    typeof d.spec !== 'object' ||
    d.spec === null ||
    (d.missed !== 'skip' && d.missed !== 'runOnce') ||
    typeof d.grace !== 'number' ||
    typeof d.m !== 'number' ||
    typeof d.version !== 'number'
  ) {
    throw new Error(`schedule '${name}': malformed stored definition ${json.slice(0, 200)}`);
  }
  return d as StoredDefinition;
}
