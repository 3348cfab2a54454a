/**
 * The default codec: the job payload as UTF-8 JSON, with the values JSON cannot carry written as tagged
 * objects so that they come back as the same types. A layout-2 record stores the payload's <value>
 * (below) alone, after its header; layout 1 stored the envelope below, which jsonEnvelopeCodec
 * still reads for `delayq migrate`. This file holds the codec; its parts are json-encode.ts and
 * json-decode.ts (the tagged <value>), json-text.ts (the checks of the text) and json-envelope.ts.
 *
 * WIRE FORMAT (envelope format 1). Other implementations must read and write exactly this.
 *
 *   {"v":1,"id":"…","version":1,"createdAt":1767225600000,"traceparent":"00-…","payload":<value>}
 *
 * The envelope is a JSON object with exactly the keys v (must be 1), id (string), version (integer >= 1),
 * createdAt (finite number, epoch ms), payload (a <value>, required) and optionally traceparent (string).
 * Any other key, a missing key or a wrong type makes the bytes undecodable; a new field means a new `v`.
 * Envelope keys are never escaped: the rules below apply inside `payload` only.
 *
 * A <value> is null, true, false, a string, a finite number other than -0, an array of <value>s, a plain
 * object whose member values are <value>s, or a tag object. A tag object has the key "~t" (the tag name,
 * a string) and, for every tag except "undefined", the key "v", and no other key:
 *
 *   {"~t":"undefined"}                            undefined (object member, array item, Map/Set entry, payload)
 *   {"~t":"number","v":"NaN"}                     v is one of "NaN", "Infinity", "-Infinity", "-0", or the
 *                                                 exact decimal integer of a double n with 2^53 <= |n| < 1e21,
 *                                                 e.g. "1152921504606846976" (2^60; JavaScript's BigInt(n), Python's
 *                                                 str(int(n)), not String(n), which rounds to "1152921504606847000"):
 *                                                 JSON.stringify writes these as integer literals, which readers
 *                                                 refuse (below)
 *   {"~t":"Date","v":"2026-01-01T00:00:00.000Z"}  v is exactly what Date.prototype.toISOString() prints:
 *                                                 YYYY-MM-DDTHH:mm:ss.sssZ (always UTC "Z", always three
 *                                                 millisecond digits), years outside 0..9999 as ±YYYYYY;
 *                                                 "+00:00", a missing ".sss" or a date that does not exist
 *                                                 (2026-02-30) is undecodable
 *   {"~t":"BigInt","v":"-1234567890123456789"}    v is canonical decimal: -?(0|[1-9][0-9]*), never "-0"
 *   {"~t":"Map","v":[[<key>,<value>],…]}          entries in insertion order, keys are <value>s of any kind
 *   {"~t":"Set","v":[<value>,…]}                  items in insertion order
 *   {"~t":"Uint8Array","v":"AAEC"}                bytes as canonical RFC 4648 base64, padded, no white space
 *   {"~t":"Buffer","v":"AAEC"}                    same bytes encoding; Node readers return a Buffer, other
 *                                                 languages may treat it exactly like Uint8Array
 *
 * NUMBERS. A number token with neither fraction nor exponent (an integer literal) must lie within
 * ±(2^53 - 1): beyond it a JavaScript number would silently round it, so the whole envelope is undecodable
 * (like an int 64 beyond that range in the msgpack codec). Write such integers as BigInt tags. Number
 * tokens with a fraction or an exponent are doubles and read as IEEE 754 doubles do.
 *
 * Map keys and Set items must be pairwise distinct after decoding (SameValueZero, as JS Map/Set compare);
 * duplicates are undecodable rather than silently merged.
 *
 * KEY ESCAPING. A payload object key that starts with "~" is written with one more "~" in front
 * ("~t" -> "~~t", "~~x" -> "~~~x"); a reader strips exactly one. So a key that starts with exactly one "~"
 * never comes from user data: "~t" marks a tag object and every other such key is reserved (undecodable).
 * Map keys and strings are values, not object keys, and are never escaped. The key "__proto__" is never
 * written (encoding refuses it) and is undecodable anywhere, envelope included.
 *
 * Not preserved, by design: shared references (each occurrence is written in full, so identity is lost),
 * null prototypes (plain objects come back with Object.prototype), array holes (come back as undefined),
 * non-index array properties, non-enumerable properties, and the bytes around a Uint8Array view. Accessor
 * properties are read like data, possibly more than once.
 */
import { isUtf8 } from 'node:buffer';
import { DecodeError, EncodeError } from '../errors.js';
import type { Codec } from './codec.js';
import { fromTagged } from './json-decode.js';
import { toTagged } from './json-encode.js';
import { duplicateKeyError, SIXTEEN_DIGITS, unsafeIntegerLiteral } from './json-text.js';
import { describe, errorMessage } from './validate.js';

/** The payload as tagged JSON (a <value> of the wire format above), UTF-8. */
function encodePayload(payload: unknown): Buffer {
  return Buffer.from(encodePayloadText(payload), 'utf8');
}

/**
 * The payload as tagged JSON text: what encodePayload returns the UTF-8 bytes of, with the same
 * errors. The add path writes it where the record goes, without a Buffer of its own.
 */
export function encodePayloadText(payload: unknown): string {
  const tagged = toTagged(payload);
  try {
    return JSON.stringify(tagged);
  } catch (e) {
    throw new EncodeError(
      `cannot encode job: ${errorMessage(e)}; store large data elsewhere and enqueue a reference`,
      { cause: e },
    );
  }
}

/** The payload of tagged JSON bytes (a <value>), with the same checks as an envelope's payload. */
function decodePayload(bytes: Buffer): unknown {
  if (!((bytes as unknown) instanceof Uint8Array)) {
    throw new DecodeError(`cannot decode job: expected a Buffer, got ${describe(bytes)}`);
  }
  if (!isUtf8(bytes)) {
    throw new DecodeError(
      'cannot decode job: the stored payload is not valid UTF-8, so it was not written by the json codec (is the producer configured with another codec?)',
    );
  }
  const text = bytes.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new DecodeError(`cannot decode job: the stored payload is not valid JSON (${errorMessage(e)})`, {
      cause: e,
    });
  }
  const repeated = duplicateKeyError(text);
  if (repeated) throw repeated;
  const unsafe = SIXTEEN_DIGITS.test(text) ? unsafeIntegerLiteral(text) : undefined;
  if (unsafe !== undefined) {
    throw new DecodeError(
      `cannot decode job: it holds the integer literal ${unsafe}, beyond ±(2^53 - 1), which a JavaScript number would silently round; write such integers as {"~t":"BigInt","v":"${unsafe}"}`,
    );
  }
  return fromTagged(parsed);
}

/** The default codec: UTF-8 JSON with tagged special values, as specified at the top of this file. */
export const jsonCodec: Codec = Object.freeze({
  name: 'json',
  encodePayload,
  decodePayload,
});
