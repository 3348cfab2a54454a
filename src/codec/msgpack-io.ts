/**
 * The msgpack codec's own writer and reader, so that delayq's extension types (80..84) live here and not
 * in msgpackr's process-wide registry, where every other msgpackr user in the process would see them
 * (and could replace them). The writer follows msgpackr's choices byte for byte (docs/PROTOCOL.md, the
 * integer-width rule: the test vectors were made with msgpackr and must not change); the reader runs only
 * on bytes msgpack-scan.ts has checked, so it trusts their structure.
 */
import { MSGPACK_EXT } from './msgpack-scan.js';

/** A BigInt on its way to ext 80. */
export class BigIntExt {
  constructor(readonly value: bigint) {}
}
/** A Buffer on its way to or from ext 83 (a plain Uint8Array is bin). */
export class BufferExt {
  constructor(readonly bytes: Buffer) {}
}
class MapMarker {}
class SetMarker {}
class NegativeZero {}

/** Leads an array that stands for a Map: [marker, k1, v1, …] (ext 81). */
export const MAP_MARKER = Object.freeze(new MapMarker());
/** Leads an array that stands for a Set: [marker, i1, …] (ext 82). */
export const SET_MARKER = Object.freeze(new SetMarker());
/** -0, which msgpackr writes as the integer 0 (ext 84). */
export const NEGATIVE_ZERO = Object.freeze(new NegativeZero());

const ZERO_BYTE = Buffer.from([0]);

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

// ---------------------------------------------------------------------------------------------------------
// Writing: the tree the walk made (plain data, Dates, Uint8Arrays and the classes above), as msgpackr with
// useRecords: false, variableMapSize: true and no float32 writes it.

class Writer {
  buf = Buffer.allocUnsafe(512);
  pos = 0;

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.pos++] = b;
  }

  header(b: number, size: number, length: number): void {
    this.room(1 + size);
    this.buf[this.pos++] = b;
    if (size === 1) this.buf[this.pos] = length;
    else if (size === 2) this.buf.writeUInt16BE(length, this.pos);
    else this.buf.writeUInt32BE(length, this.pos);
    this.pos += size;
  }

  bytes(data: Uint8Array): void {
    this.room(data.length);
    this.buf.set(data, this.pos);
    this.pos += data.length;
  }

  value(v: unknown): void {
    switch (typeof v) {
      case 'string':
        return this.string(v);
      case 'number':
        return this.number(v);
      case 'boolean':
        return this.byte(v ? 0xc3 : 0xc2);
      case 'undefined':
        // fixext 1, type 0, data 0: what msgpackr (and other implementations) write for undefined.
        this.byte(0xd4);
        this.byte(0);
        return this.byte(0);
      case 'object':
        return v === null ? this.byte(0xc0) : this.object(v);
      default:
        throw new Error(`the msgpack writer got ${typeof v}, which the walk never passes on`);
    }
  }

  private string(s: string): void {
    const length = Buffer.byteLength(s, 'utf8');
    if (length < 0x20) this.byte(0xa0 | length);
    else if (length < 0x100) this.header(0xd9, 1, length);
    else if (length < 0x10000) this.header(0xda, 2, length);
    else this.header(0xdb, 4, length);
    this.room(length);
    this.pos += this.buf.write(s, this.pos, length, 'utf8');
  }

  private number(n: number): void {
    if (n >>> 0 === n) {
      if (n < 0x80) this.byte(n);
      else if (n < 0x100) this.header(0xcc, 1, n);
      else if (n < 0x10000) this.header(0xcd, 2, n);
      else this.header(0xce, 4, n);
    } else if (n >> 0 === n) {
      this.room(5);
      if (n >= -0x20) this.buf[this.pos++] = 0x100 + n;
      else if (n >= -0x80) {
        this.buf[this.pos++] = 0xd0;
        this.buf[this.pos++] = n + 0x100;
      } else if (n >= -0x8000) {
        this.buf[this.pos++] = 0xd1;
        this.pos = this.buf.writeInt16BE(n, this.pos);
      } else {
        this.buf[this.pos++] = 0xd2;
        this.pos = this.buf.writeInt32BE(n, this.pos);
      }
    } else {
      this.room(9);
      this.buf[this.pos++] = 0xcb;
      this.pos = this.buf.writeDoubleBE(n, this.pos);
    }
  }

  private object(o: object): void {
    if (Array.isArray(o)) {
      const n = o.length;
      if (n < 0x10) this.byte(0x90 | n);
      else if (n < 0x10000) this.header(0xdc, 2, n);
      else this.header(0xdd, 4, n);
      for (let i = 0; i < n; i++) this.value(o[i]);
      return;
    }
    if (o instanceof Date) return this.date(o);
    if (o instanceof BufferExt) return this.ext(MSGPACK_EXT.buffer, o.bytes);
    if (o instanceof Uint8Array) {
      const n = o.length;
      if (n < 0x100) this.header(0xc4, 1, n);
      else if (n < 0x10000) this.header(0xc5, 2, n);
      else this.header(0xc6, 4, n);
      return this.bytes(o);
    }
    if (o instanceof BigIntExt) return this.ext(MSGPACK_EXT.bigint, bigintToBytes(o.value));
    if (o === MAP_MARKER) return this.ext(MSGPACK_EXT.map, ZERO_BYTE);
    if (o === SET_MARKER) return this.ext(MSGPACK_EXT.set, ZERO_BYTE);
    if (o === NEGATIVE_ZERO) return this.ext(MSGPACK_EXT.negativeZero, ZERO_BYTE);
    const record = o as Record<string, unknown>;
    const keys = Object.keys(record);
    const n = keys.length;
    if (n < 0x10) this.byte(0x80 | n);
    else if (n < 0x10000) this.header(0xde, 2, n);
    else this.header(0xdf, 4, n);
    for (let i = 0; i < n; i++) {
      const key = keys[i]!;
      this.string(key);
      this.value(record[key]);
    }
  }

  private ext(type: number, data: Uint8Array): void {
    const n = data.length;
    if (n === 1) this.byte(0xd4);
    else if (n === 2) this.byte(0xd5);
    else if (n === 4) this.byte(0xd6);
    else if (n === 8) this.byte(0xd7);
    else if (n === 16) this.byte(0xd8);
    else if (n < 0x100) this.header(0xc7, 1, n);
    else if (n < 0x10000) this.header(0xc8, 2, n);
    else this.header(0xc9, 4, n);
    this.byte(type & 0xff);
    this.bytes(data);
  }

  /** The timestamp extension (-1) in the smallest of its three forms, as msgpackr chooses it. */
  private date(d: Date): void {
    const ms = d.getUTCMilliseconds();
    const seconds = d.getTime() / 1000;
    this.room(15);
    if (ms === 0 && seconds >= 0 && seconds < 0x100000000) {
      this.buf[this.pos++] = 0xd6;
      this.buf[this.pos++] = 0xff;
      this.pos = this.buf.writeUInt32BE(seconds >>> 0, this.pos);
    } else if (seconds > 0 && seconds < 0x400000000) {
      // 30 bits of nanoseconds, then 34 bits of seconds.
      this.buf[this.pos++] = 0xd7;
      this.buf[this.pos++] = 0xff;
      this.pos = this.buf.writeUInt32BE((ms * 4000000 + Math.floor(seconds / 0x100000000)) >>> 0, this.pos);
      this.pos = this.buf.writeUInt32BE(seconds >>> 0, this.pos);
    } else {
      this.buf[this.pos++] = 0xc7;
      this.buf[this.pos++] = 12;
      this.buf[this.pos++] = 0xff;
      this.pos = this.buf.writeUInt32BE(ms * 1000000, this.pos);
      this.pos = this.buf.writeBigInt64BE(BigInt(Math.floor(seconds)), this.pos);
    }
  }
}

/** The bytes of `wire`, a tree of the values the walk produces. */
export function writeMsgpack(wire: unknown): Buffer {
  const w = new Writer();
  w.value(wire);
  return Buffer.from(w.buf.subarray(0, w.pos));
}

// ---------------------------------------------------------------------------------------------------------
// Reading: only bytes the scan accepted, so lengths fit, strings are valid UTF-8, map keys are strings other
// than "__proto__" (plain assignment is safe), ext types are -1, 0 or 80..84 with valid data, and int 64
// fits a number. bin comes back as a view into `b` (the fix-up walk copies it); ext 83 as a copied Buffer.

class Reader {
  pos = 0;
  private readonly view: DataView;

  constructor(private readonly b: Buffer) {
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  private u8(): number {
    return this.b[this.pos++]!;
  }

  private u16(): number {
    const n = this.view.getUint16(this.pos);
    this.pos += 2;
    return n;
  }

  private u32(): number {
    const n = this.view.getUint32(this.pos);
    this.pos += 4;
    return n;
  }

  value(): unknown {
    const t = this.u8();
    if (t <= 0x7f) return t;
    if (t >= 0xe0) return t - 0x100;
    if (t <= 0x8f) return this.map(t & 0x0f);
    if (t <= 0x9f) return this.array(t & 0x0f);
    if (t <= 0xbf) return this.str(t & 0x1f);
    const v = this.view;
    const at = this.pos;
    switch (t) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return this.bin(this.u8());
      case 0xc5:
        return this.bin(this.u16());
      case 0xc6:
        return this.bin(this.u32());
      case 0xc7:
        return this.ext(this.u8());
      case 0xc8:
        return this.ext(this.u16());
      case 0xc9:
        return this.ext(this.u32());
      case 0xca:
        this.pos += 4;
        return v.getFloat32(at);
      case 0xcb:
        this.pos += 8;
        return v.getFloat64(at);
      case 0xcc:
        return this.u8();
      case 0xcd:
        return this.u16();
      case 0xce:
        return this.u32();
      case 0xcf:
        this.pos += 8;
        return Number(v.getBigUint64(at));
      case 0xd0:
        this.pos += 1;
        return v.getInt8(at);
      case 0xd1:
        this.pos += 2;
        return v.getInt16(at);
      case 0xd2:
        this.pos += 4;
        return v.getInt32(at);
      case 0xd3:
        this.pos += 8;
        return Number(v.getBigInt64(at));
      case 0xd4:
        return this.ext(1);
      case 0xd5:
        return this.ext(2);
      case 0xd6:
        return this.ext(4);
      case 0xd7:
        return this.ext(8);
      case 0xd8:
        return this.ext(16);
      case 0xd9:
        return this.str(this.u8());
      case 0xda:
        return this.str(this.u16());
      case 0xdb:
        return this.str(this.u32());
      case 0xdc:
        return this.array(this.u16());
      case 0xdd:
        return this.array(this.u32());
      case 0xde:
        return this.map(this.u16());
      default:
        return this.map(this.u32());
    }
  }

  private str(length: number): string {
    const start = this.pos;
    this.pos += length;
    return this.b.toString('utf8', start, this.pos);
  }

  private bin(length: number): Uint8Array {
    const start = this.pos;
    this.pos += length;
    return this.b.subarray(start, this.pos);
  }

  private array(length: number): unknown[] {
    const out = new Array<unknown>(length);
    for (let i = 0; i < length; i++) out[i] = this.value();
    return out;
  }

  private map(length: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < length; i++) {
      // The scan allows only string keys, never "__proto__".
      const key = this.value() as string;
      // A repeated key would silently keep the last value: refused, as the json codec does.
      if (Object.hasOwn(out, key)) {
        throw new Error(
          `an object repeats the key ${JSON.stringify(key)}; the encoder never writes a key twice`,
        );
      }
      out[key] = this.value();
    }
    return out;
  }

  private ext(length: number): unknown {
    const type = this.view.getInt8(this.pos++);
    const start = this.pos;
    this.pos += length;
    const data = this.b.subarray(start, this.pos);
    switch (type) {
      case -1:
        return timestamp(data);
      case 0:
        return undefined;
      case MSGPACK_EXT.bigint:
        return bigintFromBytes(data);
      case MSGPACK_EXT.map:
        return MAP_MARKER;
      case MSGPACK_EXT.set:
        return SET_MARKER;
      case MSGPACK_EXT.buffer:
        // Copied, so the job does not keep the whole stored envelope alive.
        return new BufferExt(Buffer.from(data));
      default:
        // MSGPACK_EXT.negativeZero: the scan admits no other type.
        return -0;
    }
  }
}

/**
 * A timestamp extension's data (4, 8 or 12 bytes, range checked by the scan) as a Date. The Date
 * constructor truncates the fraction of a ms toward zero, as msgpackr's reader does.
 */
function timestamp(d: Buffer): Date {
  if (d.length === 4) return new Date(d.readUInt32BE(0) * 1000);
  if (d.length === 8) {
    const high = d.readUInt32BE(0);
    const seconds = (high & 0x3) * 0x100000000 + d.readUInt32BE(4);
    return new Date(Math.floor(high / 4) / 1000000 + seconds * 1000);
  }
  return new Date(d.readUInt32BE(0) / 1000000 + Number(d.readBigInt64BE(4)) * 1000);
}

/** The tree in `bytes`, which must have passed the scan. */
export function readMsgpack(bytes: Buffer): unknown {
  return new Reader(bytes).value();
}
