/**
 * Options of one `add`, validated once into what the add script needs.
 */
import { randomFillSync } from 'node:crypto';
import { validateBackoffSpec, type BackoffSpec, type ResolvedBackoff } from './backoff.js';
import { MAX_RUN_AT, MIN_RUN_AT } from './due-bounds.js';
import { describe, parseDuration, parseMs, type Duration } from './duration.js';
import { assertKnownOptions } from './option-names.js';

const DURABILITY_OPTIONS: ReadonlySet<string> = new Set(['replicas', 'timeoutMs']);
import { ValidationError } from './errors.js';
import type { When } from './operations/add.js';
import { MAX_PRIORITY, MIN_PRIORITY } from './record/header.js';

const ID_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ID_LENGTH = 14;
const ID_CODES = Buffer.from(ID_ALPHABET, 'latin1');
const idBytes = Buffer.alloc(ID_LENGTH);
const pool = Buffer.alloc(8192);
let poolAt = pool.length;

/**
 * A generated job id: 14 letters and digits, 83 random bits. Redis keeps a string of up to 14
 * bytes in a 16-byte allocation, and the id is stored twice per waiting job (record field, waiting
 * member): 32 B per job less than 22 characters (docs/ARCHITECTURE.md §3.3). A collision with a
 * live job is not trusted to chance: the add sends a generated id with mode `new`, the script
 * answers `taken` and the id is drawn again. Letters and digits only, so an id never reads as a
 * CLI option.
 */
export function newJobId(): string {
  let n = 0;
  while (n < ID_LENGTH) {
    if (poolAt >= pool.length) {
      // One call to the CSPRNG per 8 KiB, not one per id: a bulk add makes thousands of ids.
      randomFillSync(pool);
      poolAt = 0;
    }
    const byte = pool[poolAt++]!;
    // Bytes of 248 and above are skipped: 248 = 4 × 62, so every character is equally likely.
    if (byte < 248) idBytes[n++] = ID_CODES[byte % 62]!;
  }
  // One native string from the bytes: 0.16 µs an id, where appending 14 one-letter strings took 0.25.
  return idBytes.toString('latin1', 0, ID_LENGTH);
}

/** Options of `queue.add`. */
export interface AddOptions {
  /** Run this long after now (server clock): ms or a duration string like '10m'. */
  delay?: Duration;
  /** Run at this time: a Date or epoch ms. Give delay or runAt, not both. */
  runAt?: Date | number;
  /** Your id for the job (default: 14 random letters and digits); adding an id that exists writes nothing and returns created: false. */
  id?: string;
  /** Attempts before the job goes to the dead set (>= 1). */
  attempts?: number;
  /** Wait between attempts. */
  backoff?: BackoffSpec;
  /** Abort an attempt that runs longer than this (its signal aborts; it counts as failed, reason "timed out"). */
  timeoutMs?: number;
  /**
   * Resolve only once `replicas` replicas hold the job (WAIT after the write), within `timeoutMs`
   * (default 1 s); fewer in time throws DurabilityError. See docs/DURABILITY.md.
   */
  durability?: { replicas: number; timeoutMs?: number };
  /**
   * What to do when a job with this `id` exists: 'keep' (default) writes nothing; 'replace'
   * (debounce) replaces a waiting job's payload, due time and options atomically, and writes
   * nothing to a running, dead or completed one (the result gives its state).
   */
  onExists?: OnExists;
  /**
   * Among due jobs, lower runs first: a whole number from -1024 to 1023, default 0. Strict, so a
   * steady stream of urgent jobs can keep others waiting. Not available with the wheel strategy.
   */
  priority?: number;
  /**
   * The job's group (issue 16), such as a tenant: workers run at most `groups.concurrency` jobs of
   * one group at once across all of them (default 1), groups with due jobs take turns, and a busy
   * group never holds back the others. 1 to 255 bytes of UTF-8, no control characters. Not with a
   * priority, nor with the wheel strategy.
   */
  group?: string;
}

/** What add does when the id exists: keep it, or replace a waiting job. */
export type OnExists = 'keep' | 'replace';

/** Add options after validation. */
export interface ResolvedAddOptions {
  id: string;
  when: When;
  attempts: number;
  backoff?: ResolvedBackoff;
  timeoutMs?: number;
  durability?: { replicas: number; timeoutMs: number };
  onExists: OnExists;
  /** -1024..1023; 0 the default class. */
  priority: number;
  /** The job's group, if any. */
  group?: string;
  /** The id was generated here (not the caller's): a collision is retried with a new one. */
  generated: boolean;
}

const MAX_ID_LENGTH = 512;
// The record stores max attempts as a uint16 (src/record/).
const MAX_ATTEMPTS = 65_535;
// ... and an attempt's timeout as a uint32 of ms.
const MAX_TIMEOUT_MS = 0xffff_ffff;
/** How long an add with `durability` waits for replicas unless told. */
export const DEFAULT_DURABILITY_TIMEOUT_MS = 1_000;
/** The keys of add's options (and of a bulk job's `opts`). */
export const ADD_OPTIONS: ReadonlySet<string> = new Set([
  'delay',
  'runAt',
  'id',
  'attempts',
  'backoff',
  'timeoutMs',
  'durability',
  'onExists',
  'priority',
  'group',
]);

/** Validate `opts` (from `add`), filling defaults; throws ValidationError naming the wrong option. */
export function resolveAddOptions(
  opts: AddOptions | undefined,
  defaults: { attempts: number; backoff?: ResolvedBackoff },
): ResolvedAddOptions {
  const o: AddOptions = opts ?? {};
  if (typeof o !== 'object' || o === null)
    throw new ValidationError(`add options must be an object, got ${describe(o)}`, 'opts');
  assertKnownOptions(o, ADD_OPTIONS, 'add option');
  let when: When = { delay: 0 };
  if (o.delay !== undefined && o.runAt !== undefined) {
    throw new ValidationError('give either delay or runAt, not both', 'runAt');
  }
  if (o.delay !== undefined) when = { delay: parseDuration(o.delay, 'delay') };
  if (o.runAt !== undefined) when = { at: parseRunAt(o.runAt) };

  let id: string;
  if (o.id === undefined) {
    id = newJobId();
  } else {
    if (typeof o.id !== 'string' || o.id.length === 0 || o.id.length > MAX_ID_LENGTH) {
      throw new ValidationError(
        `id must be a non-empty string of at most ${MAX_ID_LENGTH} characters, got ${describe(o.id)}`,
        'id',
      );
    }
    // A lone surrogate is sent to Redis as U+FFFD: two different ids would be one job, and the
    // second add would silently return the first job.
    if (/\p{Cs}/u.test(o.id)) {
      throw new ValidationError(
        `id ${JSON.stringify(o.id)} contains a lone surrogate (not well-formed Unicode)`,
        'id',
      );
    }
    // Newlines, NUL and other control characters break every line-based view of the job (logs, CLI).
    if (/\p{Cc}/u.test(o.id)) {
      throw new ValidationError(`id ${JSON.stringify(o.id)} may not contain control characters`, 'id');
    }
    id = o.id;
  }
  const attempts = o.attempts ?? defaults.attempts;
  if (!Number.isInteger(attempts) || attempts < 1 || attempts > MAX_ATTEMPTS) {
    throw new ValidationError(
      `attempts must be a whole number from 1 to ${MAX_ATTEMPTS}, got ${describe(attempts)}`,
      'attempts',
    );
  }
  const priority = o.priority ?? 0;
  if (!Number.isInteger(priority) || priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
    throw new ValidationError(
      `priority must be a whole number from ${MIN_PRIORITY} (runs first) to ${MAX_PRIORITY}, got ${describe(priority)}`,
      'priority',
    );
  }
  const backoff = o.backoff === undefined ? defaults.backoff : validateBackoffSpec(o.backoff, 'backoff');
  const onExists = o.onExists ?? 'keep';
  if (onExists !== 'keep' && onExists !== 'replace') {
    throw new ValidationError(`onExists must be 'keep' or 'replace', got ${describe(onExists)}`, 'onExists');
  }
  const resolved: ResolvedAddOptions = {
    id,
    when,
    attempts,
    onExists,
    priority,
    generated: o.id === undefined,
  };
  if (backoff !== undefined) resolved.backoff = backoff;
  if (o.timeoutMs !== undefined) {
    const timeoutMs = parseMs(o.timeoutMs, 'timeoutMs');
    if (timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) {
      throw new ValidationError(
        `timeoutMs must be from 1 ms to ${MAX_TIMEOUT_MS} ms (about 49 days), got ${timeoutMs}`,
        'timeoutMs',
      );
    }
    resolved.timeoutMs = timeoutMs;
  }
  if (o.durability !== undefined) resolved.durability = resolveDurability(o.durability);
  if (o.group !== undefined) {
    resolved.group = validateGroup(o.group);
    if (priority !== 0) {
      throw new ValidationError(
        `a job with a group cannot have a priority (got group ${JSON.stringify(o.group)} and priority ${priority}); groups take turns instead, so leave priority out`,
        'priority',
      );
    }
  }
  return resolved;
}

function resolveDurability(value: unknown): { replicas: number; timeoutMs: number } {
  if (typeof value !== 'object' || value === null) {
    throw new ValidationError(
      `durability must be { replicas, timeoutMs? }, got ${describe(value)}`,
      'durability',
    );
  }
  const d = value as Record<string, unknown>;
  assertKnownOptions(d, DURABILITY_OPTIONS, 'durability option', { path: 'durability' });
  const { replicas, timeoutMs = DEFAULT_DURABILITY_TIMEOUT_MS } = d;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 1) {
    throw new ValidationError(
      `durability.replicas must be a whole number >= 1, got ${describe(replicas)}`,
      'durability.replicas',
    );
  }
  // WAIT with timeout 0 would block forever.
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1) {
    throw new ValidationError(
      `durability.timeoutMs must be a whole number of ms >= 1, got ${describe(timeoutMs)}`,
      'durability.timeoutMs',
    );
  }
  return { replicas, timeoutMs };
}

/** The longest group name: its length is one byte of the record's header. */
export const MAX_GROUP_BYTES = 255;

/**
 * Check a group name (validated like ids: no control characters, well-formed Unicode) and return
 * it; throws ValidationError naming `group`.
 */
export function validateGroup(group: unknown): string {
  if (typeof group !== 'string' || group.length === 0) {
    throw new ValidationError(`group must be a non-empty string, got ${describe(group)}`, 'group');
  }
  if (/\p{Cs}/u.test(group)) {
    throw new ValidationError(
      `group ${JSON.stringify(group)} contains a lone surrogate (not well-formed Unicode)`,
      'group',
    );
  }
  // A group's jobs are found by the range "<group>\0" to "<group>\1" (docs/ARCHITECTURE.md §3.5): no name may
  // hold those bytes, nor any other control character that breaks a line-based view.
  if (/\p{Cc}/u.test(group)) {
    throw new ValidationError(`group ${JSON.stringify(group)} may not contain control characters`, 'group');
  }
  const bytes = Buffer.byteLength(group, 'utf8');
  if (bytes > MAX_GROUP_BYTES) {
    throw new ValidationError(
      `group must be at most ${MAX_GROUP_BYTES} bytes of UTF-8, got ${bytes} bytes`,
      'group',
    );
  }
  return group;
}

/** Validate a runAt (Date or epoch ms) into epoch ms. */
export function parseRunAt(value: unknown): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new ValidationError(
      `runAt must be a valid Date or epoch milliseconds, got ${describe(value)}`,
      'runAt',
    );
  }
  // A time before 2000 is almost always epoch seconds passed as ms; the scripts refuse it too.
  if (ms < MIN_RUN_AT || ms > MAX_RUN_AT) {
    throw new ValidationError(
      `runAt must lie between 2000-01-01 and 9999-12-31 (epoch ms ${MIN_RUN_AT} to ${MAX_RUN_AT}), got ${describe(value)}; epoch seconds instead of ms?`,
      'runAt',
    );
  }
  return Math.round(ms);
}
