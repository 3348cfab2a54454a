import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { resolveBatchOptions } from './batch-options.js';
import { resolveWorkerOptions } from './options.js';

/** The ValidationError `fn` throws, for its message and path. */
function refusal(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('expected a ValidationError, nothing was thrown');
}

describe('batch options', () => {
  it('takes size and waitMs; waitMs defaults to 0 (hand over what is due now)', () => {
    expect(resolveBatchOptions({ size: 100, waitMs: 20 })).toEqual({ size: 100, waitMs: 20 });
    expect(resolveBatchOptions({ size: 1 })).toEqual({ size: 1, waitMs: 0 });
    expect(resolveBatchOptions(undefined)).toBeUndefined();
  });

  it.each([0, -1, 1.5, Number.NaN, '10', 10_001, undefined])('refuses size %s, naming batch.size', (size) => {
    const err = refusal(() => resolveBatchOptions({ size }));
    expect(err.issues[0]?.path).toBe('batch.size');
    expect(err.message).toMatch(/batch\.size must be a whole number from 1 to 10000/);
  });

  it.each([-1, Number.NaN, Infinity, '20'])('refuses waitMs %s, naming batch.waitMs', (waitMs) => {
    const err = refusal(() => resolveBatchOptions({ size: 10, waitMs }));
    expect(err.issues[0]?.path).toBe('batch.waitMs');
    expect(err.message).toMatch(/batch\.waitMs must be a number of ms >= 0/);
  });

  it('refuses a batch that is not an object, and unknown keys inside it', () => {
    expect(refusal(() => resolveBatchOptions(100)).issues[0]?.path).toBe('batch');
    const typo = refusal(() => resolveBatchOptions({ size: 10, wait: 5 }));
    expect(typo.issues[0]?.path).toBe('batch.wait');
    expect(typo.message).toMatch(
      /unknown batch option 'wait' \(did you mean 'waitMs'\? .*\); known: size, waitMs/,
    );
  });

  it('as a worker option: resolved, no claim-ahead by default, and an explicit prefetch refused', () => {
    const o = resolveWorkerOptions({ batch: { size: 50, waitMs: 5 }, concurrency: 4 });
    expect(o.batch).toEqual({ size: 50, waitMs: 5 });
    expect(o.prefetch).toBe(0);
    expect(resolveWorkerOptions({ concurrency: 4 }).batch).toBeUndefined();
    const err = refusal(() => resolveWorkerOptions({ batch: { size: 50 }, prefetch: 10 }));
    expect(err.issues[0]?.path).toBe('prefetch');
    expect(err.message).toMatch(/prefetch does not apply to a batch worker/);
    expect(refusal(() => resolveWorkerOptions({ batch: { size: 0 } })).issues[0]?.path).toBe('batch.size');
  });
});
