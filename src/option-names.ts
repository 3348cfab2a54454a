/**
 * Option names users get wrong: an unknown key of any options object is refused (a typo silently
 * ignored would leave a default in force, e.g. a misspelled connection quietly using localhost, or
 * `addBulk([{ payload, delay }])` running at once), naming the nearest valid key. One helper for
 * every options object: assertKnownOptions.
 */
import { describe } from './duration.js';
import { ValidationError } from './errors.js';

/**
 * The known name `key` most likely meant, or undefined: the same name with or without the Ms
 * suffix (users guess `lease` for `leaseMs`), the same name in another case, or one within a small
 * edit distance (a third of the name's length, at least 1; ties go to the first known).
 */
export function nearestOption(key: string, known: Iterable<string>): string | undefined {
  const names = [...known];
  const suffix = [`${key}Ms`, key.replace(/Ms$/, '')].find((name) => name !== key && names.includes(name));
  if (suffix !== undefined) return suffix;
  const lower = key.toLowerCase();
  const sameCase = names.find((name) => name.toLowerCase() === lower);
  if (sameCase !== undefined) return sameCase;
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(key.length / 3)) + 1;
  for (const name of names) {
    const d = editDistance(lower, name.toLowerCase());
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * For an unknown option `key`: " (did you mean 'leaseMs'? ...)" naming the nearest known option,
 * with the units rule when the miss is the Ms suffix; '' when none is near.
 */
export function suggestOption(key: string, known: ReadonlySet<string>): string {
  const hit = nearestOption(key, known);
  if (hit === undefined) return '';
  if (hit === `${key}Ms`)
    return ` (did you mean '${hit}'? options named ...Ms take a number of milliseconds)`;
  if (key === `${hit}Ms`) return ` (did you mean '${hit}'? it takes ms or a duration string such as '30s')`;
  return ` (did you mean '${hit}'?)`;
}

/** How assertKnownOptions names a refused key. */
export interface KnownOptionsHow {
  /** The object's path, put before the key in the path (`backoff` -> `backoff.kind`). */
  path?: string;
  /**
   * A better suggestion than the nearest known key, when `key` belongs elsewhere (a bulk job's
   * `delay`, which goes in `opts`): the text after "did you mean", or undefined.
   */
  hint?: (key: string) => string | undefined;
}

/**
 * Throws ValidationError for the first key of `options` not in `known`: the message names the key,
 * the nearest valid one and every valid one; the path is the key (under `how.path`).
 * Call it before anything is written.
 */
export function assertKnownOptions(
  options: object,
  known: ReadonlySet<string>,
  what: string,
  how: KnownOptionsHow = {},
): void {
  for (const key of Object.keys(options)) {
    if (known.has(key)) continue;
    const path = how.path === undefined ? key : `${how.path}.${key}`;
    const hint = how.hint?.(key);
    const suggestion = hint === undefined ? suggestOption(key, known) : ` (did you mean ${hint})`;
    throw new ValidationError(`unknown ${what} '${key}'${suggestion}; known: ${[...known].join(', ')}`, path);
  }
}

/**
 * Edits from `a` to `b`: insertions, deletions, substitutions and swaps of two neighbours (the
 * usual typo, `dealy`), each 1 (optimal string alignment; option names are short).
 */
function editDistance(a: string, b: string): number {
  const d: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row[j] = j;
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, row[j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      }
      row[j] = best;
    }
    d.push(row);
  }
  return d[a.length]![b.length]!;
}

/**
 * Throws ValidationError unless `value` (the option `name`) is an object whose keys are all in
 * `known` (assertKnownOptions names a wrong key).
 */
export function assertOptionObject(value: unknown, known: ReadonlySet<string>, name: string): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError(`${name} must be { ${[...known].join(', ')} }, got ${describe(value)}`, name);
  }
  assertKnownOptions(value, known, `${name} key`, { path: name });
}
