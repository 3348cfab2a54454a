/**
 * The vocabulary of tagged JSON (the wire format at the top of json.ts), shared by its encoder
 * (json-encode.ts) and decoder (json-decode.ts): the tag key, the escaping of payload keys that
 * start with "~", and the forms a tag's value must have.
 */

/** The key that marks a tag object on the wire. */
export const TAG_KEY = '~t';

/** The first character of a tag key, and of every escaped payload key. */
export const TILDE = 0x7e;
/** A canonical decimal integer: what a BigInt tag and a large "number" tag hold. */
export const CANONICAL_BIGINT = /^-?(?:0|[1-9]\d*)$/;
/** Below this magnitude JSON.stringify writes every integral number as an integer literal. */
export const EXPONENT_FROM = 1e21;
/** What a Date tag's value must look like, before the calendar check (toISOString round trip). */
export const DATE_PATTERN = /^(?:\d{4}|[+-]\d{6})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Returns the wire form of a payload object key: keys starting with "~" get one more "~" in front. */
export function escapeKey(key: string): string {
  return key.charCodeAt(0) === TILDE ? `~${key}` : key;
}

/** Returns the payload object key a wire key stands for, or undefined if the wire key is reserved (one leading "~"). */
export function unescapeKey(wireKey: string): string | undefined {
  if (wireKey.charCodeAt(0) !== TILDE) return wireKey;
  return wireKey.charCodeAt(1) === TILDE ? wireKey.slice(1) : undefined;
}
