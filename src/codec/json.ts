/**
 * The default codec: the job payload as UTF-8 JSON, with the values JSON cannot carry written as tagged
 * objects so that they come back as the same types. A layout-2 record stores the payload's <value>
 * (below) alone, after its header; layout 1 stored the envelope below, which jsonEnvelopeCodec
 * still reads for `delayq migrate`.
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
import type { Codec, Envelope, EnvelopeCodec } from './codec.js';
import { wireWalker } from './walk.js';
import {
  at,
  checkEnvelopeFields,
  describe,
  errorMessage,
  formatPath,
  keySegment,
  mapValueSegment,
  Problem,
  validateEnvelope,
} from './validate.js';

/** The key that marks a tag object on the wire. */
export const TAG_KEY = '~t';

const TILDE = 0x7e;
const CANONICAL_BIGINT = /^-?(?:0|[1-9]\d*)$/;
/** Below this magnitude JSON.stringify writes every integral number as an integer literal. */
const EXPONENT_FROM = 1e21;
/** What a Date tag's value must look like, before the calendar check (toISOString round trip). */
const DATE_PATTERN = /^(?:\d{4}|[+-]\d{6})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// Frozen and shared: tags without a payload-specific value need no allocation per occurrence.
const UNDEFINED_TAG = Object.freeze({ '~t': 'undefined' });
const NAN_TAG = Object.freeze({ '~t': 'number', v: 'NaN' });
const INFINITY_TAG = Object.freeze({ '~t': 'number', v: 'Infinity' });
const NEG_INFINITY_TAG = Object.freeze({ '~t': 'number', v: '-Infinity' });
const NEG_ZERO_TAG = Object.freeze({ '~t': 'number', v: '-0' });

const SUPPORTED =
  'plain objects, arrays, strings, finite and non-finite numbers, booleans, null, undefined, bigint, Date, Map, Set, Uint8Array and Buffer';

/** Returns the wire form of a payload object key: keys starting with "~" get one more "~" in front. */
export function escapeKey(key: string): string {
  return key.charCodeAt(0) === TILDE ? `~${key}` : key;
}

/** Returns the payload object key a wire key stands for, or undefined if the wire key is reserved (one leading "~"). */
export function unescapeKey(wireKey: string): string | undefined {
  if (wireKey.charCodeAt(0) !== TILDE) return wireKey;
  return wireKey.charCodeAt(1) === TILDE ? wireKey.slice(1) : undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Encoding: the shared walk (walk.ts) validates everything and copies only the containers on the path to a
// special value, so a payload with nothing special is handed to the native JSON.stringify as is.

function encodeNumber(n: number): unknown {
  if (n - n === 0) {
    if (n === 0) return 1 / n < 0 ? NEG_ZERO_TAG : n;
    // JSON.stringify would write an integer literal beyond ±(2^53 - 1), which readers refuse.
    const size = n < 0 ? -n : n;
    // The exact integer, not String(n): every language prints that one the same way (docs/PROTOCOL.md).
    return size > Number.MAX_SAFE_INTEGER && size < EXPONENT_FROM
      ? { '~t': 'number', v: BigInt(n).toString() }
      : n;
  }
  return n !== n ? NAN_TAG : n > 0 ? INFINITY_TAG : NEG_INFINITY_TAG;
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** What JSON lacks, as tag objects (the table at the top of this file). */
const walkToTagged = wireWalker({
  codec: 'json',
  format: 'JSON',
  supported: SUPPORTED,
  maxDepth: Number.POSITIVE_INFINITY,
  string: (s) => s,
  key: escapeKey,
  number: encodeNumber,
  bigint: (n) => ({ '~t': 'BigInt', v: n.toString() }),
  undefined: UNDEFINED_TAG,
  date: (d) => ({ '~t': 'Date', v: d.toISOString() }),
  uint8Array: (u) => ({ '~t': 'Uint8Array', v: base64(u) }),
  buffer: (b) => ({ '~t': 'Buffer', v: b.toString('base64') }),
  map: (flat) => {
    const entries: unknown[] = [];
    for (let i = 0; i < flat.length; i += 2) entries.push([flat[i], flat[i + 1]]);
    return { '~t': 'Map', v: entries };
  },
  set: (items) => ({ '~t': 'Set', v: items }),
});

/**
 * Returns the JSON-ready tagged form of `value` (sharing unchanged subtrees with it), or throws EncodeError
 * naming the offending path under `root`.
 */
export function toTagged(value: unknown, root = 'payload'): unknown {
  try {
    return walkToTagged(value);
  } catch (e) {
    if (e instanceof Problem) {
      const path = formatPath(root, e.segments);
      const problem =
        e.refersToDepth === undefined
          ? e.message
          : `refers back to ${formatPath(root, e.segments, e.refersToDepth)}, which contains it (a cycle); ${e.message}`;
      throw new EncodeError(`cannot encode job: ${path} ${problem}`, { cause: e.cause });
    }
    if (e instanceof RangeError) {
      throw new EncodeError(
        `cannot encode job: ${root} could not be walked (${e.message}), most likely because it is nested too deeply; flatten the data or store it elsewhere and enqueue a reference`,
        { cause: e },
      );
    }
    throw e;
  }
}

function encodeEnvelope(envelope: Envelope): Buffer {
  checkEnvelopeFields(envelope, 'json');
  const { v, id, version, createdAt, traceparent } = envelope;
  const payload = toTagged(envelope.payload);
  const wire =
    traceparent === undefined
      ? { v, id, version, createdAt, payload }
      : { v, id, version, createdAt, traceparent, payload };
  let text: string;
  try {
    text = JSON.stringify(wire);
  } catch (e) {
    throw new EncodeError(
      `cannot encode job ${id}: ${errorMessage(e)}; store large data elsewhere and enqueue a reference`,
      { cause: e },
    );
  }
  return Buffer.from(text, 'utf8');
}

// ---------------------------------------------------------------------------------------------------------
// Decoding: JSON.parse builds the tree (it defines "__proto__" as an ordinary own key and never touches a
// prototype); the walk then replaces tags in place and only rebuilds objects whose keys need unescaping.
// Assigning into a parsed object is safe because the key is always an existing own data property that is
// not "__proto__", and rebuilt objects are filled with defineProperty so no setter can run.

function decodeAny(value: unknown): unknown {
  if (typeof value === 'object') {
    if (value === null) return null;
    return Array.isArray(value) ? decodeArray(value) : decodeObject(value as Record<string, unknown>);
  }
  // JSON.parse turns number literals beyond the double range into Infinity; the encoder never writes one.
  if (typeof value === 'number' && value - value !== 0) {
    throw new Problem('is a number literal outside the double range');
  }
  return value;
}

function decodeArray(a: unknown[]): unknown[] {
  let i = 0;
  try {
    for (; i < a.length; i++) {
      const item = a[i];
      if (typeof item === 'object' || typeof item === 'number') {
        const decoded = decodeAny(item);
        if (decoded !== item) a[i] = decoded;
      }
    }
  } catch (e) {
    throw at(e, `[${i}]`, 'decoded');
  }
  return a;
}

function decodeObject(o: Record<string, unknown>): unknown {
  const keys = Object.keys(o);
  let i = 0;
  try {
    for (; i < keys.length; i++) {
      const key = keys[i]!;
      if (key.charCodeAt(0) === TILDE || key === '__proto__') break;
      const item = o[key];
      if (typeof item === 'object' || typeof item === 'number') {
        const decoded = decodeAny(item);
        if (decoded !== item) o[key] = decoded;
      }
    }
  } catch (e) {
    throw at(e, keySegment(keys[i] ?? ''), 'decoded');
  }
  if (i === keys.length) return o;
  // Outside the try: these are problems of this object itself, not of the member at keys[i].
  if (keys[i] === '__proto__') throw protoKeyProblem();
  return Object.hasOwn(o, TAG_KEY) ? decodeTag(o, keys) : rebuildEscaped(o, keys, i);
}

function protoKeyProblem(): Problem {
  return new Problem(
    'has an own "__proto__" key, which the encoder never writes; refusing it keeps prototypes safe',
  );
}

/** Keys before `start` already hold decoded values; keys from `start` on are still wire values. */
function rebuildEscaped(o: Record<string, unknown>, keys: readonly string[], start: number): unknown {
  // Validated up front so that a bad key is reported as a problem of this object, not of a member.
  const userKeys = keys.map((key) => {
    if (key === '__proto__') throw protoKeyProblem();
    const userKey = unescapeKey(key);
    if (userKey === undefined) {
      throw new Problem(
        `has the key ${JSON.stringify(key)}; keys with exactly one leading "~" are reserved (user keys starting with "~" are written with one more "~")`,
      );
    }
    return userKey;
  });
  const out: Record<string, unknown> = {};
  let i = 0;
  try {
    for (; i < keys.length; i++) {
      const value = i < start ? o[keys[i]!] : decodeAny(o[keys[i]!]);
      Object.defineProperty(out, userKeys[i]!, {
        value,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
  } catch (e) {
    throw at(e, keySegment(userKeys[i] ?? ''), 'decoded');
  }
  return out;
}

function decodeTag(o: Record<string, unknown>, keys: readonly string[]): unknown {
  let hasValue = false;
  for (const key of keys) {
    if (key === 'v') hasValue = true;
    else if (key !== TAG_KEY) {
      throw new Problem(
        `is a tag object (it has a "~t" key) with the extra key ${JSON.stringify(key)}; tag objects have only "~t" and "v"`,
      );
    }
  }
  const tag = o[TAG_KEY];
  if (typeof tag !== 'string') throw new Problem(`has a "~t" tag that is ${describe(tag)}, not a string`);
  const v = hasValue ? o.v : undefined;
  const need = (): void => {
    if (!hasValue) throw new Problem(`is a ${JSON.stringify(tag)} tag without its "v" value`);
  };
  switch (tag) {
    case 'undefined':
      if (hasValue) throw new Problem('is an "undefined" tag with a "v" value, which it never has');
      return undefined;
    case 'number':
      need();
      switch (v) {
        case 'NaN':
          return NaN;
        case 'Infinity':
          return Infinity;
        case '-Infinity':
          return -Infinity;
        case '-0':
          return -0;
        default: {
          const n = typeof v === 'string' ? largeIntegralNumber(v) : undefined;
          if (n !== undefined) return n;
          throw new Problem(
            `is a "number" tag whose value ${describe(v)} is not one of "NaN", "Infinity", "-Infinity", "-0", or the exact decimal integer of a double n with 2^53 <= |n| < 1e21 (e.g. "1152921504606846976" for 2^60)`,
          );
        }
      }
    case 'Date': {
      need();
      if (typeof v === 'string' && DATE_PATTERN.test(v)) {
        const date = new Date(v);
        // The round trip admits only the canonical toISOString form, never the engine's lenient parsing.
        if (date.getTime() === date.getTime() && date.toISOString() === v) return date;
      }
      throw new Problem(
        `is a "Date" tag whose value ${describe(v)} is not a valid toISOString() timestamp (YYYY-MM-DDTHH:mm:ss.sssZ: UTC "Z", three millisecond digits, a date that exists)`,
      );
    }
    case 'BigInt':
      need();
      if (typeof v === 'string' && CANONICAL_BIGINT.test(v) && v !== '-0') return BigInt(v);
      throw new Problem(`is a "BigInt" tag whose value ${describe(v)} is not a canonical decimal integer`);
    case 'Map':
      need();
      return decodeMap(v);
    case 'Set':
      need();
      return decodeSet(v);
    case 'Uint8Array':
    case 'Buffer': {
      need();
      const bytes = typeof v === 'string' ? Buffer.from(v, 'base64') : undefined;
      // Buffer.from skips characters it does not know; the round trip rejects anything non-canonical.
      if (bytes === undefined || bytes.toString('base64') !== v) {
        throw new Problem(
          `is a ${JSON.stringify(tag)} tag whose value ${describe(v)} is not canonical base64`,
        );
      }
      return tag === 'Buffer' ? bytes : new Uint8Array(bytes);
    }
    default:
      throw new Problem(
        `has the unknown tag ${JSON.stringify(tag)}; it was written by a newer or different codec, or is corrupt`,
      );
  }
}

/**
 * The double a "number" tag's decimal stands for, when it is the exact integer of one the encoder
 * tags; else undefined. A decimal no double equals (2^53 + 1) is refused, never rounded.
 */
function largeIntegralNumber(v: string): number | undefined {
  if (!CANONICAL_BIGINT.test(v)) return undefined;
  const n = Number(v);
  const size = n < 0 ? -n : n;
  return size > Number.MAX_SAFE_INTEGER && size < EXPONENT_FROM && BigInt(n).toString() === v ? n : undefined;
}

function decodeMap(v: unknown): Map<unknown, unknown> {
  if (!Array.isArray(v))
    throw new Problem(`is a "Map" tag whose value is ${describe(v)}, not an array of entries`);
  const map = new Map<unknown, unknown>();
  let i = 0;
  let inKey = true;
  let key: unknown;
  try {
    for (; i < v.length; i++) {
      const entry: unknown = v[i];
      inKey = true;
      key = undefined;
      if (!Array.isArray(entry) || entry.length !== 2) {
        throw new Problem(
          `is ${describe(entry)}${Array.isArray(entry) ? ` of length ${entry.length}` : ''}, not a [key, value] pair`,
        );
      }
      key = decodeAny(entry[0]);
      inKey = false;
      map.set(key, decodeAny(entry[1]));
      if (map.size !== i + 1) {
        inKey = true;
        throw new Problem('repeats an earlier key; the encoder never writes duplicate Map keys');
      }
    }
  } catch (e) {
    throw at(e, inKey ? `[map key #${i}]` : mapValueSegment(key, i), 'decoded');
  }
  return map;
}

function decodeSet(v: unknown): Set<unknown> {
  if (!Array.isArray(v))
    throw new Problem(`is a "Set" tag whose value is ${describe(v)}, not an array of items`);
  const set = new Set<unknown>();
  let i = 0;
  try {
    for (; i < v.length; i++) {
      set.add(decodeAny(v[i]));
      if (set.size !== i + 1) {
        throw new Problem('repeats an earlier item; the encoder never writes duplicate Set items');
      }
    }
  } catch (e) {
    throw at(e, `[set item #${i}]`, 'decoded');
  }
  return set;
}

/**
 * Returns the value a freshly parsed tagged JSON tree stands for, or throws DecodeError naming the path
 * under `root`; it consumes `json`, reusing and mutating its objects so untagged data is never copied.
 */
export function fromTagged(json: unknown, root = 'payload', context = 'cannot decode job'): unknown {
  try {
    return decodeAny(json);
  } catch (e) {
    if (e instanceof Problem) {
      throw new DecodeError(`${context}: ${formatPath(root, e.segments)} ${e.message}`, { cause: e.cause });
    }
    throw new DecodeError(`${context}: ${root} could not be decoded (${errorMessage(e)})`, { cause: e });
  }
}

function decodeEnvelope(bytes: Uint8Array): Envelope {
  if (!((bytes as unknown) instanceof Uint8Array)) {
    throw new DecodeError(`cannot decode job: expected a Buffer, got ${describe(bytes)}`);
  }
  if (!isUtf8(bytes)) {
    throw new DecodeError(
      'cannot decode job: the stored bytes are not valid UTF-8, so they were not written by the json codec (is the producer configured with another codec?)',
    );
  }
  const text = Buffer.isBuffer(bytes)
    ? bytes.toString('utf8')
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new DecodeError(`cannot decode job: the stored bytes are not valid JSON (${errorMessage(e)})`, {
      cause: e,
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new DecodeError(`cannot decode job: the envelope must be a JSON object, got ${describe(parsed)}`);
  }
  const repeated = duplicateKeyError(text);
  if (repeated) throw repeated;
  // 2^53 - 1 has 16 digits: without a run of 16 digits no integer literal can be out of range.
  const unsafe = SIXTEEN_DIGITS.test(text) ? unsafeIntegerLiteral(text) : undefined;
  if (unsafe !== undefined) {
    const id = (parsed as Record<string, unknown>).id;
    throw new DecodeError(
      `cannot decode job${typeof id === 'string' ? ` ${id}` : ''}: it holds the integer literal ${unsafe}, beyond ±(2^53 - 1), which a JavaScript number would silently round; write such integers as {"~t":"BigInt","v":"${unsafe}"}`,
    );
  }
  return validateEnvelope(parsed as Record<string, unknown>, (payload, id) =>
    fromTagged(payload, 'payload', `cannot decode job ${id}`),
  );
}

/** The refusal of a payload in which one object repeats a key (JSON.parse keeps the last silently). */
function duplicateKeyError(text: string): DecodeError | undefined {
  const key = duplicateKey(text);
  return key === undefined
    ? undefined
    : new DecodeError(
        `cannot decode job: an object of the payload repeats the key ${JSON.stringify(key)}; JSON.parse would keep the last one silently, and the encoder never writes a key twice`,
      );
}

/**
 * The first key that one object of `text` (JSON that JSON.parse accepted) holds twice, or
 * undefined. Strings are skipped with indexOf; a key with escapes is compared by its value, so
 * "a" and "\u0061" are one key.
 */
export function duplicateKey(text: string): string | undefined {
  // Two members need two colons; most small payloads stop here.
  const firstColon = text.indexOf(':');
  if (firstColon < 0 || text.indexOf(':', firstColon + 1) < 0) return undefined;
  // The keys of every open object, one flat list: each open container has its start in it (-1:
  // an array). A key is looked for among its object's keys by a linear search while they are
  // few, through a Set past MANY_KEYS; no allocation per object in the usual case.
  const keys: string[] = [];
  const starts: number[] = [];
  let from = -1;
  let big: Set<string> | undefined;
  const bigs: Array<Set<string> | undefined> = [];
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        let back = end - 1;
        while (text.charCodeAt(back) === 0x5c) back--;
        if ((end - 1 - back) % 2 === 0) break;
      }
      if (from >= 0) {
        let next = end + 1;
        while (next < n && text.charCodeAt(next) <= 0x20) next++;
        if (text.charCodeAt(next) === 0x3a) {
          const raw = text.slice(i + 1, end);
          const key = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
          if (big !== undefined) {
            if (big.has(key)) return key;
            big.add(key);
          } else {
            for (let k = from; k < keys.length; k++) if (keys[k] === key) return key;
            if (keys.length - from >= MANY_KEYS) big = new Set(keys.slice(from));
          }
          keys.push(key);
        }
      }
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      starts.push(from);
      bigs.push(big);
      from = c === 0x7b ? keys.length : -1;
      big = undefined;
    } else if (c === 0x7d || c === 0x5d) {
      if (from >= 0) keys.length = from;
      from = starts.pop() ?? -1;
      big = bigs.pop();
    }
  }
  return undefined;
}

/** Past this many keys in one object, duplicateKey looks keys up in a Set rather than a list. */
const MANY_KEYS = 16;

const SIXTEEN_DIGITS = /\d{16}/;
const NUMBER_TOKEN = /-?\d+(\.\d+)?([eE][+-]?\d+)?/y;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The first integer literal (a number token with neither fraction nor exponent) outside ±(2^53 - 1) in
 * `text`, which JSON.parse has already accepted; strings are skipped, so digits inside them never count.
 */
export function unsafeIntegerLiteral(text: string): string | undefined {
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string: a backslash escapes the next character, so \" does not end it.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      NUMBER_TOKEN.lastIndex = i;
      const match = NUMBER_TOKEN.exec(text);
      if (match === null) continue;
      const token = match[0];
      if (match[1] === undefined && match[2] === undefined) {
        const size = BigInt(token);
        if (size > MAX_SAFE || -size > MAX_SAFE) return token;
      }
      i += token.length - 1;
    }
  }
  return undefined;
}

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

/** Layout 1's json envelope (the whole wire format above), for `delayq migrate`. */
export const jsonEnvelopeCodec: EnvelopeCodec = Object.freeze({
  name: 'json',
  encode: encodeEnvelope,
  decode: decodeEnvelope,
});
