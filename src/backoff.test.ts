import { describe, expect, it } from 'vitest';
import { backoffDelay, DEFAULT_BACKOFF, validateBackoffSpec, type ResolvedBackoff } from './backoff.js';
import { ValidationError } from './errors.js';

/** The largest value Math.random() returns. */
const ALMOST_ONE = 1 - 2 ** -53;

const never = (): number => {
  throw new Error('random() called for a backoff without jitter');
};

describe('backoffDelay', () => {
  it('fixed: the same delay after every attempt', () => {
    const fixed: ResolvedBackoff = { type: 'fixed', delay: 750 };
    expect([1, 2, 3, 10].map((a) => backoffDelay(fixed, a, null, never))).toEqual([750, 750, 750, 750]);
  });

  it('exponential: delay doubles per attempt, starting at delay after the first', () => {
    const exp: ResolvedBackoff = { type: 'exponential', delay: 100 };
    expect([1, 2, 3, 4, 11].map((a) => backoffDelay(exp, a, null, never))).toEqual([
      100, 200, 400, 800, 102_400,
    ]);
  });

  it('exponential with max: capped at max, from the attempt that would pass it on', () => {
    const exp: ResolvedBackoff = { type: 'exponential', delay: 100, max: 500 };
    expect([1, 2, 3, 4, 5, 60].map((a) => backoffDelay(exp, a, null, never))).toEqual([
      100, 200, 400, 500, 500, 500,
    ]);
    // A max of 0 means retry at once, not "no cap".
    expect(backoffDelay({ type: 'exponential', delay: 100, max: 0 }, 3, null, never)).toBe(0);
  });

  it('jitter: 50% of the delay at random() = 0, all of it at the largest random(), linear between', () => {
    const jittered: ResolvedBackoff = { type: 'fixed', delay: 1_000, jitter: true };
    expect(backoffDelay(jittered, 1, null, () => 0)).toBe(500);
    expect(backoffDelay(jittered, 1, null, () => 0.5)).toBe(750);
    expect(backoffDelay(jittered, 1, null, () => ALMOST_ONE)).toBe(1_000);
  });

  it('jitter applies after the cap, so a capped delay never exceeds max', () => {
    const spec: ResolvedBackoff = { type: 'exponential', delay: 1_000, max: 5_000, jitter: true };
    for (const r of [0, 0.25, ALMOST_ONE]) {
      const d = backoffDelay(spec, 20, null, () => r);
      expect(d).toBeGreaterThanOrEqual(2_500);
      expect(d).toBeLessThanOrEqual(5_000);
    }
    expect(backoffDelay(spec, 20, null, () => 0)).toBe(2_500);
  });

  it('the default: 1 s doubling, capped at 1 h, jittered to 50–100%', () => {
    expect(backoffDelay(DEFAULT_BACKOFF, 1, null, () => 0)).toBe(500);
    expect(backoffDelay(DEFAULT_BACKOFF, 3, null, () => ALMOST_ONE)).toBe(4_000);
    expect(backoffDelay(DEFAULT_BACKOFF, 40, null, () => 0)).toBe(1_800_000);
    expect(backoffDelay(DEFAULT_BACKOFF, 40, null, () => ALMOST_ONE)).toBe(3_600_000);
  });

  it('a function gets the attempt and the error; its result is rounded to whole ms', () => {
    const seen: unknown[] = [];
    const boom = new Error('boom');
    const fn = (attempt: number, error: unknown): number => {
      seen.push([attempt, error]);
      return attempt * 10.4;
    };
    expect(backoffDelay(fn, 3, boom, never)).toBe(31);
    expect(seen).toEqual([[3, boom]]);
  });

  it.each([
    ['NaN', Number.NaN],
    ['a negative number', -5],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['-Infinity', Number.NEGATIVE_INFINITY],
    ['a non-number', '100' as unknown as number],
  ])('a function returning %s retries at once (0 ms), never at a NaN or past time', (_what, value) => {
    expect(backoffDelay(() => value, 1, null, never)).toBe(0);
  });
});

describe('validateBackoffSpec', () => {
  it.each([
    [null, /backoff must be/],
    [{ type: 'linear', delay: 1 }, /backoff must be/],
    [{ type: 'fixed', delay: -1 }, /backoff\.delay must be a finite number/],
    [{ type: 'fixed', delay: '1 fortnight' }, /backoff\.delay/],
    [{ type: 'fixed', delay: Number.NaN }, /backoff\.delay/],
    [{ type: 'exponential', delay: 1, max: -1 }, /backoff\.max must be/],
    [{ type: 'exponential', delay: 1, max: Number.POSITIVE_INFINITY }, /backoff\.max must be/],
    [{ type: 'fixed', delay: 1, jitter: 'yes' }, /backoff\.jitter must be true or false/],
  ])('refuses %j', (spec, message) => {
    expect(() => validateBackoffSpec(spec, 'backoff')).toThrow(ValidationError);
    expect(() => validateBackoffSpec(spec, 'backoff')).toThrow(message);
  });

  it('returns a valid spec with its durations in ms', () => {
    const spec = { type: 'exponential', delay: 10, max: 100, jitter: false };
    expect(validateBackoffSpec(spec, 'backoff')).toStrictEqual(spec);
    expect(validateBackoffSpec({ type: 'fixed', delay: '2s' }, 'backoff')).toStrictEqual({
      type: 'fixed',
      delay: 2_000,
    });
  });
});
