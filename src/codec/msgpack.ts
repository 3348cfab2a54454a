/**
 * The msgpack codec: the job envelope as MessagePack (written and read by msgpack-io.ts, byte for byte as
 * msgpackr writes it), with the payload
 * values MessagePack has no type for written as extension values, so that they come back as the same types.
 *
 * WIRE FORMAT (envelope format 1). Other implementations must read and write exactly this.
 *
 * The envelope is a map with string keys, written in this order: "v" (must be 1), "id" (string), "version"
 * (integer >= 1), "createdAt" (number, epoch ms), "traceparent" (string, only when there is one) and
 * "payload" (a <value>, required). Any other key, a missing key or a wrong type makes the bytes undecodable,
 * exactly as for the json codec; a new field means a new `v`.
 *
 * A <value> is one of:
 *
 *   nil, true, false                      null, true, false
 *   int (any width)                       a number; int 64 and uint 64 only within ±(2^53 - 1), since a
 *                                         number cannot hold more (bigger integers are BigInt, below)
 *   float 32, float 64                    a number, including NaN, ±Infinity and -0
 *   str                                   a string; must be valid UTF-8 (so a JS string with a lone
 *                                         surrogate is refused when encoding)
 *   bin                                   a Uint8Array
 *   map with str keys                     a plain object; the key "__proto__" is never written (encoding
 *                                         refuses it) and is undecodable; non-string keys are undecodable
 *   array                                 an array, unless its first item is a Map or Set marker (below)
 *   ext -1 (timestamp, 4, 8 or 12 bytes)  a Date (the MessagePack timestamp; precision below 1 ms is
 *                                         dropped, toward zero); out of the Date range is undecodable
 *   ext 0, data 0x00 (fixext 1)           undefined (the msgpackr and notepack convention)
 *   ext 80, 1 or more bytes               a BigInt: big-endian two's complement (written minimal)
 *   ext 81, data 0x00 (fixext 1)          Map marker: [marker, k1, v1, k2, v2, …] is a Map, entries in
 *                                         order, keys <value>s of any kind
 *   ext 82, data 0x00 (fixext 1)          Set marker: [marker, i1, i2, …] is a Set, items in order
 *   ext 83, 0 or more bytes               a Buffer with these bytes (readers in other languages may treat
 *                                         it exactly like bin)
 *   ext 84, data 0x00 (fixext 1)          -0 (msgpackr writes a number -0 as the integer 0, so delayq writes
 *                                         this instead; float 64 -0.0 is read as -0 too)
 *
 * A Map or Set marker anywhere but first in an array is undecodable, as are duplicate Map keys or Set items
 * (SameValueZero), a Map array with an odd number of items after the marker, every other extension type,
 * the never-used byte 0xc1, nesting deeper than MSGPACK_MAX_DEPTH containers, and bytes after the envelope.
 * Everything that is not a Map/Set marker, ext 83 or 84 is plain MessagePack, so any MessagePack library
 * can write a job whose payload holds only nil, booleans, numbers, strings, bin, arrays, string-keyed maps
 * and timestamps.
 *
 * Not preserved, by design (as with json): shared references, null prototypes, array holes (they come back
 * as undefined), non-index array properties, non-enumerable properties, and the bytes around a Uint8Array
 * view. Accessor properties are read like data, possibly more than once.
 *
 * SAFETY. Before the reader sees them, the bytes are scanned once (msgpack-scan.ts): every length is checked
 * against the input, every extension type must be one of the above (so no record definitions, structured
 * clone references, Error, RegExp or typed-array extensions of msgpackr's), every string must be valid UTF-8
 * and no map key may be "__proto__". The reader then builds plain objects, arrays and strings; nothing in
 * the bytes can define behaviour.
 *
 * delayq writes and reads the bytes itself (msgpack-io.ts) rather than through msgpackr, because msgpackr's
 * extensions live in one process-wide registry (addExtension writes module-level tables every Packr and
 * Unpackr reads, and neither takes extensions as an option): registering types 80..84 there made every other
 * msgpackr user in the process read them as delayq's values, and let any of them replace delayq's. The
 * writer follows msgpackr's choices byte for byte (test/codec/msgpack-differential.property.test.ts checks
 * it against msgpackr), so the test vectors, made with msgpackr, are unchanged.
 */
import { DecodeError, EncodeError } from '../errors.js';
import type { Codec, Envelope, EnvelopeCodec } from './codec.js';
import {
  BigIntExt,
  BufferExt,
  MAP_MARKER,
  NEGATIVE_ZERO,
  SET_MARKER,
  bigintFromBytes,
  bigintToBytes,
  readMsgpack,
  writeMsgpack,
} from './msgpack-io.js';
import { MSGPACK_EXT, MSGPACK_MAX_DEPTH, Scanner } from './msgpack-scan.js';
import { wireWalker } from './walk.js';
import {
  Problem,
  at,
  checkEnvelopeFields,
  describe,
  describeLoneSurrogate,
  errorMessage,
  formatPath,
  isWellFormed,
  keySegment,
  mapValueSegment,
  validateEnvelope,
} from './validate.js';

export { MSGPACK_EXT, MSGPACK_MAX_DEPTH, bigintFromBytes, bigintToBytes };

const SUPPORTED =
  'plain objects, arrays, strings, finite and non-finite numbers, booleans, null, undefined, bigint, Date, Map, Set, Uint8Array and Buffer';

function loneSurrogate(what: string, s: string): Problem {
  return new Problem(
    `${what} ${describeLoneSurrogate(s)}, which MessagePack strings (UTF-8) cannot carry; fix the text, or store it as bytes`,
  );
}

// ---------------------------------------------------------------------------------------------------------
// Encoding: one walk that validates everything and copies only the containers on the path to a value that
// needs an extension, so a payload with nothing special is handed to the writer as is.

/** What MessagePack lacks, as extension values (the table at the top of this file). */
const walkToWire = wireWalker({
  codec: 'msgpack',
  format: 'MessagePack',
  supported: SUPPORTED,
  maxDepth: MSGPACK_MAX_DEPTH,
  string: (s) => {
    if (!isWellFormed(s)) throw loneSurrogate('is a string with', s);
    return s;
  },
  key: (k) => {
    if (!isWellFormed(k)) throw loneSurrogate('has a key with', k);
    return k;
  },
  number: (n) => (n === 0 && 1 / n < 0 ? NEGATIVE_ZERO : n),
  bigint: (n) => new BigIntExt(n),
  undefined: undefined,
  date: (d) => d,
  uint8Array: (u) => u,
  buffer: (b) => new BufferExt(b),
  map: (flat) => {
    flat.unshift(MAP_MARKER);
    return flat;
  },
  set: (items) => {
    items.unshift(SET_MARKER);
    return items;
  },
});

function toWire(value: unknown, root: string, id: string): unknown {
  try {
    return walkToWire(value);
  } catch (e) {
    if (e instanceof Problem) {
      const path = formatPath(root, e.segments);
      const problem =
        e.refersToDepth === undefined
          ? e.message
          : `refers back to ${formatPath(root, e.segments, e.refersToDepth)}, which contains it (a cycle); ${e.message}`;
      throw new EncodeError(`cannot encode job${id === '' ? '' : ` ${id}`}: ${path} ${problem}`, {
        cause: e.cause,
      });
    }
    if (e instanceof RangeError) {
      throw new EncodeError(
        `cannot encode job ${id}: ${root} could not be walked (${e.message}), most likely because it is nested too deeply; flatten the data or store it elsewhere and enqueue a reference`,
        { cause: e },
      );
    }
    throw e;
  }
}

function encodeEnvelope(envelope: Envelope): Buffer {
  checkEnvelopeFields(envelope, 'msgpack');
  const { v, id, version, createdAt, traceparent } = envelope;
  if (!isWellFormed(id)) throw envelopeStringProblem(id, 'id', id);
  if (traceparent !== undefined && !isWellFormed(traceparent)) {
    throw envelopeStringProblem(id, 'traceparent', traceparent);
  }
  const payload = toWire(envelope.payload, 'payload', id);
  const wire =
    traceparent === undefined
      ? { v, id, version, createdAt, payload }
      : { v, id, version, createdAt, traceparent, payload };
  try {
    return writeMsgpack(wire);
  } catch (e) {
    throw new EncodeError(`cannot encode job ${id}: the bytes could not be written (${errorMessage(e)})`, {
      cause: e,
    });
  }
}

function envelopeStringProblem(id: string, field: string, value: string): EncodeError {
  return new EncodeError(
    `cannot encode job ${id}: envelope.${field} ${loneSurrogate('is a string with', value).message}`,
  );
}

// ---------------------------------------------------------------------------------------------------------
// Decoding, step 2: the reader builds the tree; where the scan saw bin, ext 83 or markers, a walk replaces them
// in place. Assigning into the reader's objects is safe: each key is an existing own data property, never
// "__proto__" (the scan refused it).

function unwire(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const head: unknown = value[0];
    if (head === MAP_MARKER) return unwireMap(value);
    if (head === SET_MARKER) return unwireSet(value);
    let i = 0;
    try {
      for (; i < value.length; i++) {
        const item: unknown = value[i];
        if (typeof item === 'object' && item !== null) {
          const decoded = unwire(item);
          if (decoded !== item) value[i] = decoded;
        }
      }
    } catch (e) {
      throw at(e, `[${i}]`, 'decoded');
    }
    return value;
  }
  if (value instanceof BufferExt) return value.bytes;
  // bin: copied out of the stored bytes into a Uint8Array of its own.
  if (value instanceof Uint8Array) return new Uint8Array(value);
  if (value instanceof Date) return value;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o);
  let i = 0;
  try {
    for (; i < keys.length; i++) {
      const item = o[keys[i]!];
      if (typeof item === 'object' && item !== null) {
        const decoded = unwire(item);
        if (decoded !== item) o[keys[i]!] = decoded;
      }
    }
  } catch (e) {
    throw at(e, keySegment(keys[i] ?? ''), 'decoded');
  }
  return o;
}

function unwireMap(a: readonly unknown[]): Map<unknown, unknown> {
  const map = new Map<unknown, unknown>();
  let index = 0;
  let inKey = true;
  let key: unknown;
  try {
    for (let i = 1; i < a.length; i += 2, index++) {
      inKey = true;
      key = undefined;
      key = unwire(a[i]);
      inKey = false;
      map.set(key, unwire(a[i + 1]));
      if (map.size !== index + 1) {
        inKey = true;
        throw new Problem('repeats an earlier key; the encoder never writes duplicate Map keys');
      }
    }
  } catch (e) {
    throw at(e, inKey ? `[map key #${index}]` : mapValueSegment(key, index), 'decoded');
  }
  return map;
}

function unwireSet(a: readonly unknown[]): Set<unknown> {
  const set = new Set<unknown>();
  let i = 1;
  try {
    for (; i < a.length; i++) {
      set.add(unwire(a[i]));
      if (set.size !== i) {
        throw new Problem('repeats an earlier item; the encoder never writes duplicate Set items');
      }
    }
  } catch (e) {
    throw at(e, `[set item #${i - 1}]`, 'decoded');
  }
  return set;
}

function fromWire(wire: unknown, id: string): unknown {
  try {
    return unwire(wire);
  } catch (e) {
    if (e instanceof Problem) {
      throw new DecodeError(
        `cannot decode job${id === '' ? '' : ` ${id}`}: ${formatPath('payload', e.segments)} ${e.message}`,
        {
          cause: e.cause,
        },
      );
    }
    throw new DecodeError(`cannot decode job ${id}: payload could not be decoded (${errorMessage(e)})`, {
      cause: e,
    });
  }
}

/** The scan reports paths from the envelope down; a payload path reads like the json codec's. */
function scanPath(segments: readonly string[]): string {
  const path = formatPath('', segments);
  return path.startsWith('.payload') ? path.slice(1) : `envelope${path}`;
}

function decodeEnvelope(bytes: Uint8Array): Envelope {
  if (!((bytes as unknown) instanceof Uint8Array)) {
    throw new DecodeError(`cannot decode job: expected a Buffer, got ${describe(bytes)}`);
  }
  const scanner = new Scanner(bytes);
  try {
    scanner.envelope();
  } catch (e) {
    if (e instanceof Problem) {
      const message = `${e.segments.length === 0 ? 'the envelope' : scanPath(e.segments)} ${e.message}`;
      throw new DecodeError(`cannot decode job: ${message}`);
    }
    throw new DecodeError(
      `cannot decode job: the bytes could not be read (${errorMessage(e)}), most likely because they are nested too deeply`,
      { cause: e },
    );
  }
  let decoded: unknown;
  try {
    decoded = readMsgpack(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch (e) {
    throw new DecodeError(`cannot decode job: the bytes could not be read (${errorMessage(e)})`, {
      cause: e,
    });
  }
  return validateEnvelope(decoded as Record<string, unknown>, (payload, id) =>
    scanner.walk ? fromWire(payload, id) : payload,
  );
}

/** The payload alone as MessagePack, with the same rules as an envelope's payload. */
function encodePayload(payload: unknown): Buffer {
  const wire = toWire(payload, 'payload', '');
  try {
    return writeMsgpack(wire);
  } catch (e) {
    throw new EncodeError(`cannot encode job: the bytes could not be written (${errorMessage(e)})`, {
      cause: e,
    });
  }
}

/** The payload of MessagePack bytes, checked as an envelope's payload is. */
function decodePayload(bytes: Buffer): unknown {
  if (!((bytes as unknown) instanceof Uint8Array)) {
    throw new DecodeError(`cannot decode job: expected a Buffer, got ${describe(bytes)}`);
  }
  const scanner = new Scanner(bytes);
  try {
    scanner.payload();
  } catch (e) {
    if (e instanceof Problem) {
      throw new DecodeError(`cannot decode job: ${formatPath('payload', e.segments)} ${e.message}`);
    }
    throw new DecodeError(
      `cannot decode job: the bytes could not be read (${errorMessage(e)}), most likely because they are nested too deeply`,
      { cause: e },
    );
  }
  let decoded: unknown;
  try {
    decoded = readMsgpack(bytes);
  } catch (e) {
    throw new DecodeError(`cannot decode job: the bytes could not be read (${errorMessage(e)})`, {
      cause: e,
    });
  }
  return scanner.walk ? fromWire(decoded, '') : decoded;
}

/** The msgpack codec, as specified at the top of this file. */
export const msgpackCodec: Codec = Object.freeze({
  name: 'msgpack',
  encodePayload,
  decodePayload,
});

/** Layout 1's msgpack envelope, for `delayq migrate`. */
export const msgpackEnvelopeCodec: EnvelopeCodec = Object.freeze({
  name: 'msgpack',
  encode: encodeEnvelope,
  decode: decodeEnvelope,
});
