/**
 * The worker option `batch` (issue 16): the handler takes up to `size` due jobs in one call, and a
 * due job waits at most `waitMs` for others to join it. Validated once here; an error names the
 * exact option (`batch.size`, `batch.waitMs`).
 */
import { ValidationError } from '../errors.js';
import { assertKnownOptions } from '../option-names.js';

/** How a batch worker groups due jobs into one handler call. */
export interface BatchOptions {
  /** Most jobs handed to the handler at once: a whole number from 1 to 10,000. */
  size: number;
  /**
   * Longest a due job is held for others to join its batch, in ms after the earliest job of the
   * batch was due (server clock). A full batch goes at once. Default 0: hand over what is due now.
   */
  waitMs?: number;
}

/** `batch` after validation. */
export interface ResolvedBatch {
  size: number;
  waitMs: number;
}

/** The largest `size`: the acks of a batch ride on claim calls of 500 each, and one batch is one handler call. */
export const MAX_BATCH_SIZE = 10_000;

const KNOWN = new Set(['size', 'waitMs']);

/** Validate `batch`; undefined when the worker runs one job per handler call. */
export function resolveBatchOptions(batch: unknown): ResolvedBatch | undefined {
  if (batch === undefined) return undefined;
  if (typeof batch !== 'object' || batch === null || Array.isArray(batch)) {
    throw new ValidationError(
      `batch must be an object such as { size: 100, waitMs: 20 }, got ${describe(batch)}`,
      'batch',
    );
  }
  assertKnownOptions(batch, KNOWN, 'batch option', { path: 'batch' });
  const { size, waitMs = 0 } = batch as Partial<BatchOptions>;
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 1 || size > MAX_BATCH_SIZE) {
    throw new ValidationError(
      `batch.size must be a whole number from 1 to ${MAX_BATCH_SIZE} (the most jobs one handler call takes), got ${describe(size)}`,
      'batch.size',
    );
  }
  if (typeof waitMs !== 'number' || !Number.isFinite(waitMs) || waitMs < 0) {
    throw new ValidationError(
      `batch.waitMs must be a number of ms >= 0 (how long a due job may wait for others to join its batch), got ${describe(waitMs)}`,
      'batch.waitMs',
    );
  }
  return { size, waitMs };
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
