/**
 * Option names users get wrong: an unknown option is refused (a typo silently ignored would leave
 * a default in force, e.g. a misspelled connection quietly using localhost), naming the option
 * meant when the guess is a near miss.
 */
import { ValidationError } from './errors.js';

/**
 * For an unknown option `key`: " (did you mean 'leaseMs'? ...)" when `key` is a known option's name
 * with or without the Ms suffix, else ''. Users guess `lease` or `timeout` for `leaseMs` and
 * `timeoutMs`; the message points at the rule instead of listing names only.
 */
export function suggestOption(key: string, known: ReadonlySet<string>): string {
  const hit = [`${key}Ms`, key.replace(/Ms$/, '')].find((name) => name !== key && known.has(name));
  if (hit === undefined) return '';
  return hit.endsWith('Ms')
    ? ` (did you mean '${hit}'? options named ...Ms take a number of milliseconds)`
    : ` (did you mean '${hit}'? it takes ms or a duration string such as '30s')`;
}

/** Throws ValidationError (issue path: the key) for the first key of `options` not in `known`. */
export function assertKnownOptions(options: object, known: ReadonlySet<string>, what: string): void {
  for (const key of Object.keys(options)) {
    if (!known.has(key)) {
      throw new ValidationError(
        `unknown ${what} '${key}'${suggestOption(key, known)}; known: ${[...known].join(', ')}`,
        key,
      );
    }
  }
}
