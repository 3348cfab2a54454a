/**
 * The seed of every fast-check property in the tests. Unseeded, fast-check draws a new seed per
 * run, so a failure seen once (a divergence found in 2 of 5 runs, or a timeout, which prints no
 * seed) could not be replayed. Here every property runs with DELAYQ_SEED when it is set, else with
 * FIXED_SEED: `npm test` is the same run every time, and CI runs the properties once more with a
 * new seed it prints (.ci/run, `npm run test:properties`). A failure's message names its seed and
 * path (fast-check's `{ seed, path }` line); the model tests also name the seed in their titles.
 * Replay (CONTRIBUTING.md):
 *
 *   DELAYQ_SEED=<seed> npx vitest run <file> -t '<test name>'
 *   DELAYQ_SEED=<seed> DELAYQ_SEED_PATH=<path> npx vitest run <file> -t '<test name>'   (the shrunk case)
 */
import type fc from 'fast-check';

/** The seed of a run with no DELAYQ_SEED: the one `npm test` and CI's first pass use. */
export const FIXED_SEED = 1;

/** DELAYQ_SEED as a seed; FIXED_SEED when it is not set. */
function seedFromEnv(): number {
  const text = process.env['DELAYQ_SEED'];
  if (text === undefined || text === '') return FIXED_SEED;
  const seed = Number(text);
  if (!Number.isInteger(seed) || seed < -(2 ** 31) || seed >= 2 ** 32) {
    throw new Error(
      `DELAYQ_SEED must be a whole number (the seed a failed run printed, a 32-bit integer), got '${text}'; unset it to use the fixed seed ${FIXED_SEED}`,
    );
  }
  return seed;
}

/** The seed every property of this run uses. */
export const PROPERTY_SEED = seedFromEnv();

/**
 * fast-check parameters for a property: `params`, the run's seed and, with DELAYQ_SEED_PATH (the
 * `path` of a failure), only that case. A path replays one property's case: name the test with -t.
 */
export function seeded<T>(params: fc.Parameters<T> = {}): fc.Parameters<T> {
  const path = process.env['DELAYQ_SEED_PATH'];
  return { ...params, seed: PROPERTY_SEED, ...(path !== undefined && path !== '' && { path }) };
}

/**
 * Parameters for a check that a mutant of a script is caught: always FIXED_SEED, whatever
 * DELAYQ_SEED says, so "caught within `numRuns`" is decided once, not drawn again by every run (a
 * new seed may need more runs to meet the mutant: that says nothing about the scripts).
 */
export function mutantCheck(numRuns: number): fc.Parameters<unknown> {
  return { seed: FIXED_SEED, numRuns, endOnFailure: true };
}
