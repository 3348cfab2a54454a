/**
 * The msgpack codec: the job envelope as MessagePack (written and read by msgpackr), with the payload
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
 * SAFETY. Before msgpackr sees them, the bytes are scanned once: every length is checked against the input,
 * every extension type must be one of the above (so msgpackr's own record definitions, structured clone
 * references, Error, RegExp and typed-array extensions never run), every string must be valid UTF-8 and no
 * map key may be "__proto__" (msgpackr would otherwise silently rename it to "__proto_"). msgpackr then
 * builds plain objects, arrays and strings; nothing in the bytes can define behaviour.
 *
 * The extension types are registered with msgpackr's addExtension (its registry is process-wide) the first
 * time this codec runs: values of delayq's private classes are written with them, and another msgpackr user
 * in the process reading types 80..84 would get delayq's values instead of an "unknown extension" error.
 */
import { isUtf8 } from 'node:buffer';
import { Packr, Unpackr, addExtension } from 'msgpackr';
import { DecodeError, EncodeError } from '../errors.js';
import type { Codec, Envelope } from './codec.js';
import {
  Problem,
  at,
  assertNoCycle,
  checkEnvelopeFields,
  classProblem,
  functionProblem,
  symbolProblem,
  describe,
  describeLoneSurrogate,
  errorMessage,
  formatPath,
  isWellFormed,
  keySegment,
  mapValueSegment,
  validateEnvelope,
} from './validate.js';

/** The MessagePack extension types the msgpack codec writes and reads (besides timestamp -1 and undefined 0). */
export const MSGPACK_EXT = Object.freeze({ bigint: 80, map: 81, set: 82, buffer: 83, negativeZero: 84 });

/** How many containers (objects, arrays, Maps, Sets) deep a msgpack payload may be nested. */
export const MSGPACK_MAX_DEPTH = 512;

const TIMESTAMP_EXT = -1;
const UNDEFINED_EXT = 0;
/** Largest |epoch ms| a Date can hold. */
const MAX_DATE_MS = 8.64e15;
const MAX_DATE_SECONDS = 8_640_000_000_000n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const ZERO_BYTE = Buffer.from([0]);
const PROTO_KEY = Buffer.from('__proto__');

const SUPPORTED =
  'plain objects, arrays, strings, finite and non-finite numbers, booleans, null, undefined, bigint, Date, Map, Set, Uint8Array and Buffer';

// ---------------------------------------------------------------------------------------------------------
// The values msgpackr writes as delayq's extensions, and reads them back as. The classes are private, so no
// other msgpackr user in the process ever hands one to its packer.

class BigIntExt {
  constructor(readonly value: bigint) {}
}
class BufferExt {
  constructor(readonly bytes: Buffer) {}
}
class MapMarker {}
class SetMarker {}
class NegativeZero {}

const MAP_MARKER = Object.freeze(new MapMarker());
const SET_MARKER = Object.freeze(new SetMarker());
const NEGATIVE_ZERO = Object.freeze(new NegativeZero());

/** Minimal big-endian two's complement: the shortest byte string whose top bit is the sign. */
export function bigintToBytes(n: bigint): Buffer {
  const negative = n < 0n;
  // For a negative n the bytes are those of ~n = -n - 1 (which is >= 0), each bit inverted.
  let hex = (negative ? -n - 1n : n).toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  if (hex.charCodeAt(0) >= 0x38 /* '8' */) hex = `00${hex}`;
  const bytes = Buffer.from(hex, 'hex');
  if (negative) for (let i = 0; i < bytes.length; i++) bytes[i] = ~bytes[i]! & 0xff;
  return bytes;
}

/** Reads big-endian two's complement of any length >= 1. */
export function bigintFromBytes(bytes: Uint8Array): bigint {
  if (bytes.length <= 6) {
    // Fits a double exactly: no hex round trip for the common small values.
    let n = 0;
    for (const byte of bytes) n = n * 256 + byte;
    if ((bytes[0]! & 0x80) !== 0) n -= 2 ** (bytes.length * 8);
    return BigInt(n);
  }
  const unsigned = BigInt(
    `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`,
  );
  return (bytes[0]! & 0x80) === 0 ? unsigned : unsigned - (1n << BigInt(bytes.length * 8));
}

let registered = false;

function registerExtensions(): void {
  if (registered) return;
  registered = true;
  addExtension({
    Class: BigIntExt,
    type: MSGPACK_EXT.bigint,
    pack: (ext: BigIntExt) => bigintToBytes(ext.value),
    unpack: bigintFromBytes,
  });
  addExtension({ Class: MapMarker, type: MSGPACK_EXT.map, pack: () => ZERO_BYTE, unpack: () => MAP_MARKER });
  addExtension({ Class: SetMarker, type: MSGPACK_EXT.set, pack: () => ZERO_BYTE, unpack: () => SET_MARKER });
  addExtension({
    Class: BufferExt,
    type: MSGPACK_EXT.buffer,
    pack: (ext: BufferExt) => ext.bytes,
    // Copied, so the job does not keep the whole stored envelope alive.
    unpack: (data: Uint8Array) => new BufferExt(Buffer.from(data)),
  });
  addExtension({
    Class: NegativeZero,
    type: MSGPACK_EXT.negativeZero,
    pack: () => ZERO_BYTE,
    unpack: () => -0,
  });
}

// Records, structured clone and msgpackr's extra types stay off: they would let bytes define structures,
// references and class instances. Plain objects use Object.keys (variableMapSize), never for-in, and the
// smallest map header, so the bytes are the same on every run; toJSON is never called.
const packr = new Packr({
  useRecords: false,
  structuredClone: false,
  moreTypes: false,
  variableMapSize: true,
  useToJSON: false,
  bundleStrings: false,
});
// int 64 arrives as a number: the scan below has already refused values a number cannot hold exactly.
const unpackr = new Unpackr({
  useRecords: false,
  structuredClone: false,
  moreTypes: false,
  mapsAsObjects: true,
  int64AsType: 'number',
  copyBuffers: false,
});

function loneSurrogate(what: string, s: string): Problem {
  return new Problem(
    `${what} ${describeLoneSurrogate(s)}, which MessagePack strings (UTF-8) cannot carry; fix the text, or store it as bytes`,
  );
}

// ---------------------------------------------------------------------------------------------------------
// Encoding: one walk that validates everything and copies only the containers on the path to a value that
// needs an extension, so a payload with nothing special is handed to msgpackr as is.

function wireAny(value: unknown, ancestors: object[]): unknown {
  switch (typeof value) {
    case 'string':
      if (!isWellFormed(value)) throw loneSurrogate('is a string with', value);
      return value;
    case 'boolean':
    case 'undefined':
      return value;
    case 'number':
      return value === 0 && 1 / value < 0 ? NEGATIVE_ZERO : value;
    case 'bigint':
      return new BigIntExt(value);
    case 'object':
      return value === null ? null : wireObject(value, ancestors);
    case 'function':
      throw functionProblem(value as (...args: never[]) => unknown);
    case 'symbol':
      throw symbolProblem(value);
  }
}

function wireObject(o: object, ancestors: object[]): unknown {
  assertNoCycle(o, ancestors, 'MessagePack');
  const proto: unknown = Object.getPrototypeOf(o);
  if (Array.isArray(o)) {
    if (proto !== Array.prototype) throw classProblem(o, 'msgpack', SUPPORTED);
    return wireArray(o, enter(o, ancestors));
  }
  if (proto === Object.prototype || proto === null) {
    return wirePlain(o as Record<string, unknown>, enter(o, ancestors));
  }
  if (proto === Date.prototype) {
    const time = (o as Date).getTime();
    if (time !== time) {
      throw new Problem('is an Invalid Date; store a valid Date, or null if there is no date');
    }
    return o;
  }
  if (proto === Map.prototype) return wireMap(o as Map<unknown, unknown>, enter(o, ancestors));
  if (proto === Set.prototype) return wireSet(o as Set<unknown>, enter(o, ancestors));
  if (proto === Uint8Array.prototype) return o;
  if (proto === Buffer.prototype) return new BufferExt(o as Buffer);
  throw classProblem(o, 'msgpack', SUPPORTED);
}

function enter(o: object, ancestors: object[]): object[] {
  if (ancestors.length >= MSGPACK_MAX_DEPTH) {
    throw new Problem(
      `is nested more than ${MSGPACK_MAX_DEPTH} containers deep, more than the msgpack codec reads; flatten the data`,
    );
  }
  ancestors.push(o);
  return ancestors;
}

function wirePlain(o: Record<string, unknown>, ancestors: object[]): unknown {
  const keys = Object.keys(o);
  for (const symbol of Object.getOwnPropertySymbols(o)) {
    if (Object.prototype.propertyIsEnumerable.call(o, symbol)) {
      throw new Problem(
        `has a symbol-keyed property (${symbol.toString()}), which cannot be stored in a job; use a string key`,
      );
    }
  }
  let out: Record<string, unknown> | undefined;
  let i = 0;
  try {
    for (; i < keys.length; i++) {
      const key = keys[i]!;
      if (key === '__proto__') {
        throw new Problem(
          'is an own property named "__proto__", which cannot be decoded safely; rename the key',
        );
      }
      if (!isWellFormed(key)) throw loneSurrogate('has a key with', key);
      const item = o[key];
      const wire =
        typeof item === 'boolean' || item === null
          ? item
          : typeof item === 'string' && isWellFormed(item)
            ? item
            : wireAny(item, ancestors);
      if (out === undefined) {
        if (wire === item) continue;
        out = {};
        for (let j = 0; j < i; j++) {
          const earlier = keys[j]!;
          out[earlier] = o[earlier];
        }
      }
      // Safe plain assignment: key is never "__proto__" (refused above).
      out[key] = wire;
    }
  } catch (e) {
    throw at(e, keySegment(keys[i] ?? ''), 'read');
  }
  ancestors.pop();
  return out ?? o;
}

function wireArray(a: readonly unknown[], ancestors: object[]): unknown {
  const n = a.length;
  let out: unknown[] | undefined;
  let i = 0;
  try {
    for (; i < n; i++) {
      const item = a[i];
      const wire =
        typeof item === 'boolean' || item === null
          ? item
          : typeof item === 'string' && isWellFormed(item)
            ? item
            : wireAny(item, ancestors);
      if (out === undefined) {
        if (wire === item) continue;
        out = a.slice(0, i);
      }
      out.push(wire);
    }
  } catch (e) {
    throw at(e, `[${i}]`, 'read');
  }
  ancestors.pop();
  return out ?? a;
}

function wireMap(m: Map<unknown, unknown>, ancestors: object[]): unknown {
  const out: unknown[] = [MAP_MARKER];
  let index = 0;
  let key: unknown;
  let inKey = true;
  try {
    for (const [k, value] of m) {
      key = k;
      inKey = true;
      const wireKey = wireAny(k, ancestors);
      inKey = false;
      out.push(wireKey, wireAny(value, ancestors));
      index++;
    }
  } catch (e) {
    throw at(e, inKey ? `[map key #${index}]` : mapValueSegment(key, index), 'read');
  }
  ancestors.pop();
  return out;
}

function wireSet(s: Set<unknown>, ancestors: object[]): unknown {
  const out: unknown[] = [SET_MARKER];
  try {
    for (const item of s) out.push(wireAny(item, ancestors));
  } catch (e) {
    throw at(e, `[set item #${out.length - 1}]`, 'read');
  }
  ancestors.pop();
  return out;
}

function toWire(value: unknown, root: string, id: string): unknown {
  try {
    return wireAny(value, []);
  } catch (e) {
    if (e instanceof Problem) {
      const path = formatPath(root, e.segments);
      const problem =
        e.refersToDepth === undefined
          ? e.message
          : `refers back to ${formatPath(root, e.segments, e.refersToDepth)}, which contains it (a cycle); ${e.message}`;
      throw new EncodeError(`cannot encode job ${id}: ${path} ${problem}`, { cause: e.cause });
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
  registerExtensions();
  try {
    return packr.pack(wire);
  } catch (e) {
    throw new EncodeError(`cannot encode job ${id}: msgpackr could not write it (${errorMessage(e)})`, {
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
// Decoding, step 1: a scan of the bytes that checks everything msgpackr would take on trust. It allocates
// nothing on the happy path and reports the path and byte offset of the first problem.

/** What a scanned value was, as far as its array cares: Map and Set markers lead their arrays. */
type Kind = 0 | 1 | 2;
const PLAIN: Kind = 0;
const MAP_MARK: Kind = 1;
const SET_MARK: Kind = 2;

class Scanner {
  pos = 0;
  /** Whether the decoded tree holds bin, ext 83 or markers, so the fix-up walk must run. */
  walk = false;
  private readonly view: DataView;

  constructor(private readonly b: Uint8Array) {
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  private problem(message: string, at = this.pos): Problem {
    return new Problem(`${message} (at byte ${at})`);
  }

  private need(n: number): void {
    if (n > this.b.length - this.pos) {
      throw this.problem(
        `is cut short: it needs ${n} more bytes but the input ends ${this.b.length - this.pos} bytes later; the stored bytes are truncated or corrupt`,
      );
    }
  }

  private u8(): number {
    this.need(1);
    return this.b[this.pos++]!;
  }

  private u16(): number {
    this.need(2);
    const n = this.view.getUint16(this.pos);
    this.pos += 2;
    return n;
  }

  private u32(): number {
    this.need(4);
    const n = this.view.getUint32(this.pos);
    this.pos += 4;
    return n;
  }

  /** Step over `n` bytes whose value needs no check (a number's bytes, a binary's contents). */
  private advance(n: number): void {
    this.need(n);
    this.pos += n;
  }

  envelope(): void {
    const t = this.b[0];
    if (t === undefined || !((t >= 0x80 && t <= 0x8f) || t === 0xde || t === 0xdf)) {
      throw new Problem(
        `is not a MessagePack map: the bytes start with ${t === undefined ? 'nothing' : tokenName(t)}; were they written by another codec?`,
      );
    }
    // The envelope map itself does not count towards the payload's depth.
    this.value(-1, false);
    if (this.pos !== this.b.length) {
      throw this.problem(`is followed by ${this.b.length - this.pos} more bytes`);
    }
  }

  value(depth: number, first: boolean): Kind {
    const start = this.pos;
    const t = this.u8();
    if (t <= 0x7f || t >= 0xe0) return PLAIN;
    if (t <= 0x8f) return this.map(t & 0x0f, depth, start);
    if (t <= 0x9f) return this.array(t & 0x0f, depth, start);
    if (t <= 0xbf) return this.str(t & 0x1f);
    switch (t) {
      case 0xc0:
      case 0xc2:
      case 0xc3:
        return PLAIN;
      case 0xc1:
        throw this.problem('is the byte 0xc1, which MessagePack never uses', start);
      case 0xc4:
        return this.bin(this.u8());
      case 0xc5:
        return this.bin(this.u16());
      case 0xc6:
        return this.bin(this.u32());
      case 0xc7:
        return this.ext(this.u8(), first, start);
      case 0xc8:
        return this.ext(this.u16(), first, start);
      case 0xc9:
        return this.ext(this.u32(), first, start);
      case 0xca:
      case 0xce:
      case 0xd2:
        this.advance(4);
        return PLAIN;
      case 0xcb:
        this.advance(8);
        return PLAIN;
      case 0xcc:
      case 0xd0:
        this.advance(1);
        return PLAIN;
      case 0xcd:
      case 0xd1:
        this.advance(2);
        return PLAIN;
      case 0xcf:
      case 0xd3: {
        this.need(8);
        const n = t === 0xcf ? this.view.getBigUint64(this.pos) : this.view.getBigInt64(this.pos);
        if (n > MAX_SAFE || n < -MAX_SAFE) {
          throw this.problem(
            `is the integer ${n}, beyond ±(2^53 - 1), which a number cannot hold exactly; write it as a BigInt (ext ${MSGPACK_EXT.bigint}) or a float`,
            start,
          );
        }
        this.pos += 8;
        return PLAIN;
      }
      case 0xd4:
        return this.ext(1, first, start);
      case 0xd5:
        return this.ext(2, first, start);
      case 0xd6:
        return this.ext(4, first, start);
      case 0xd7:
        return this.ext(8, first, start);
      case 0xd8:
        return this.ext(16, first, start);
      case 0xd9:
        return this.str(this.u8());
      case 0xda:
        return this.str(this.u16());
      case 0xdb:
        return this.str(this.u32());
      case 0xdc:
        return this.array(this.u16(), depth, start);
      case 0xdd:
        return this.array(this.u32(), depth, start);
      case 0xde:
        return this.map(this.u16(), depth, start);
      default:
        // 0xdf: every other byte value was handled above.
        return this.map(this.u32(), depth, start);
    }
  }

  private deeper(depth: number, start: number): number {
    if (depth >= MSGPACK_MAX_DEPTH) {
      throw this.problem(
        `is nested more than ${MSGPACK_MAX_DEPTH} containers deep, more than the msgpack codec reads`,
        start,
      );
    }
    return depth + 1;
  }

  private str(length: number): Kind {
    this.need(length);
    const start = this.pos;
    const end = (this.pos += length);
    // Short ASCII strings, the common case, are checked here without a view and a native call.
    let i = start;
    if (length <= 64) while (i < end && this.b[i]! < 0x80) i++;
    if (i < end && !isUtf8(this.b.subarray(i, end))) {
      throw this.problem('is a string that is not valid UTF-8', start);
    }
    return PLAIN;
  }

  private bin(length: number): Kind {
    this.advance(length);
    this.walk = true;
    return PLAIN;
  }

  private array(count: number, depth: number, start: number): Kind {
    const inner = this.deeper(depth, start);
    let i = 0;
    let head = PLAIN;
    try {
      for (; i < count; i++) {
        const kind = this.value(inner, i === 0);
        if (i === 0) head = kind;
      }
    } catch (e) {
      throw at(e, `[${i}]`, 'decoded');
    }
    if (head === MAP_MARK && count % 2 === 0) {
      throw this.problem(
        'is a Map (an array led by the Map marker) with an odd number of items after the marker; it needs key, value pairs',
        start,
      );
    }
    return PLAIN;
  }

  private map(count: number, depth: number, start: number): Kind {
    const inner = this.deeper(depth, start);
    for (let i = 0; i < count; i++) {
      const keyStart = this.pos;
      this.key();
      try {
        this.value(inner, false);
      } catch (e) {
        throw at(e, keySegment(this.keyText(keyStart)), 'decoded');
      }
    }
    return PLAIN;
  }

  private key(): void {
    const start = this.pos;
    const t = this.u8();
    let length: number;
    if (t >= 0xa0 && t <= 0xbf) length = t & 0x1f;
    else if (t === 0xd9) length = this.u8();
    else if (t === 0xda) length = this.u16();
    else if (t === 0xdb) length = this.u32();
    else {
      throw this.problem(
        `has a map key that is ${tokenName(t)}; object keys must be strings (a Map is written as an array led by the Map marker, ext ${MSGPACK_EXT.map})`,
        start,
      );
    }
    this.need(length);
    if (
      length === PROTO_KEY.length &&
      this.b[this.pos] === 0x5f /* _ */ &&
      PROTO_KEY.equals(this.b.subarray(this.pos, this.pos + length))
    ) {
      throw this.problem(
        'has a "__proto__" key, which the encoder never writes; refusing it keeps prototypes safe',
        start,
      );
    }
    this.str(length);
  }

  /** The text of the key at `start`, already checked; only called on the way out of an error. */
  private keyText(start: number): string {
    const t = this.b[start]!;
    const [length, skip] =
      t === 0xd9
        ? [this.b[start + 1]!, 2]
        : t === 0xda
          ? [this.view.getUint16(start + 1), 3]
          : t === 0xdb
            ? [this.view.getUint32(start + 1), 5]
            : [t & 0x1f, 1];
    return Buffer.from(this.b.buffer, this.b.byteOffset + start + skip, length).toString('utf8');
  }

  private ext(length: number, first: boolean, start: number): Kind {
    this.need(1 + length);
    const type = this.view.getInt8(this.pos);
    const data = this.pos + 1;
    this.pos = data + length;
    const zeroByte = length === 1 && this.b[data] === 0;
    switch (type) {
      case TIMESTAMP_EXT:
        this.timestamp(data, length, start);
        return PLAIN;
      case UNDEFINED_EXT:
        if (!zeroByte)
          throw this.problem('is an undefined (ext 0) whose data is not the one byte 0x00', start);
        return PLAIN;
      case MSGPACK_EXT.bigint:
        if (length === 0) throw this.problem(`is a BigInt (ext ${type}) without any bytes`, start);
        return PLAIN;
      case MSGPACK_EXT.negativeZero:
        if (!zeroByte) throw this.problem(`is a -0 (ext ${type}) whose data is not the one byte 0x00`, start);
        return PLAIN;
      case MSGPACK_EXT.buffer:
        this.walk = true;
        return PLAIN;
      case MSGPACK_EXT.map:
      case MSGPACK_EXT.set: {
        const what = type === MSGPACK_EXT.map ? 'Map' : 'Set';
        if (!zeroByte) {
          throw this.problem(`is a ${what} marker (ext ${type}) whose data is not the one byte 0x00`, start);
        }
        if (!first) {
          throw this.problem(
            `is a ${what} marker (ext ${type}) that is not the first item of an array, where it would mean nothing`,
            start,
          );
        }
        this.walk = true;
        return type === MSGPACK_EXT.map ? MAP_MARK : SET_MARK;
      }
      default:
        throw this.problem(
          `is a MessagePack extension of type ${type}, which the msgpack codec does not read (it reads -1 timestamp, 0 undefined and ${MSGPACK_EXT.bigint}..${MSGPACK_EXT.negativeZero}); it was written by a different encoder or is corrupt`,
          start,
        );
    }
  }

  private timestamp(data: number, length: number, start: number): void {
    if (length === 4) return;
    if (length === 8) {
      if (this.view.getUint32(data) >>> 2 >= 1e9) {
        throw this.problem('is a timestamp whose nanoseconds are 1e9 or more', start);
      }
      return;
    }
    if (length === 12) {
      const nanos = this.view.getUint32(data);
      if (nanos >= 1e9) throw this.problem('is a timestamp whose nanoseconds are 1e9 or more', start);
      const seconds = this.view.getBigInt64(data + 4);
      if (
        seconds > MAX_DATE_SECONDS ||
        seconds < -MAX_DATE_SECONDS ||
        Math.abs(Number(seconds) * 1000 + nanos / 1e6) > MAX_DATE_MS
      ) {
        throw this.problem(`is a timestamp (${seconds} s) outside the range a Date can hold`, start);
      }
      return;
    }
    throw this.problem(`is a timestamp of ${length} bytes; timestamps have 4, 8 or 12`, start);
  }
}

function tokenName(t: number): string {
  if (t <= 0x7f || t >= 0xe0 || (t >= 0xcc && t <= 0xd3)) return 'an integer';
  if (t <= 0x8f || t === 0xde || t === 0xdf) return 'a map';
  if (t <= 0x9f || t === 0xdc || t === 0xdd) return 'an array';
  if (t <= 0xbf || (t >= 0xd9 && t <= 0xdb)) return 'a string';
  if (t === 0xc0) return 'nil';
  if (t === 0xc2 || t === 0xc3) return 'a boolean';
  if (t >= 0xc4 && t <= 0xc6) return 'bin';
  if (t === 0xca || t === 0xcb) return 'a float';
  if (t === 0xc1) return 'the never-used byte 0xc1';
  return 'an extension value';
}

// ---------------------------------------------------------------------------------------------------------
// Decoding, step 2: msgpackr builds the tree; where the scan saw bin, ext 83 or markers, a walk replaces them
// in place. Assigning into msgpackr's objects is safe: each key is an existing own data property, never
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
      throw new DecodeError(`cannot decode job ${id}: ${formatPath('payload', e.segments)} ${e.message}`, {
        cause: e.cause,
      });
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
  registerExtensions();
  let decoded: unknown;
  try {
    // A view of our own: msgpackr caches a DataView on the object it reads, which must not be the caller's.
    decoded = unpackr.unpack(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch (e) {
    throw new DecodeError(`cannot decode job: msgpackr could not read the bytes (${errorMessage(e)})`, {
      cause: e,
    });
  }
  return validateEnvelope(decoded as Record<string, unknown>, (payload, id) =>
    scanner.walk ? fromWire(payload, id) : payload,
  );
}

/** The msgpack codec, as specified at the top of this file. */
export const msgpackCodec: Codec = Object.freeze({
  name: 'msgpack',
  encode: encodeEnvelope,
  decode: decodeEnvelope,
});
