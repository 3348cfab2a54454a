/**
 * The msgpack codec's byte scanner: one pass over an envelope's bytes, before the reader (msgpack-io.ts)
 * builds anything, that checks everything the reader takes on trust (docs/PROTOCOL.md, "Envelope (codec msgpack)"): valid
 * UTF-8, string map keys, no "__proto__" key, known extension types with well-formed data, integers a
 * number holds exactly, timestamps a Date holds, the nesting limit, no trailing bytes. It allocates
 * nothing on the happy path and reports the path and byte offset of the first problem.
 */
import { isUtf8 } from 'node:buffer';
import { Problem, at, keySegment } from './validate.js';

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
const PROTO_KEY = Buffer.from('__proto__');

// ---------------------------------------------------------------------------------------------------------
// Decoding, step 1: a scan of the bytes that checks everything the reader takes on trust. It allocates
// nothing on the happy path and reports the path and byte offset of the first problem.

/** What a scanned value was, as far as its array cares: Map and Set markers lead their arrays. */
type Kind = 0 | 1 | 2;
const PLAIN: Kind = 0;
const MAP_MARK: Kind = 1;
const SET_MARK: Kind = 2;

/** One pass over an envelope's bytes; `envelope()` throws a Problem naming the first thing wrong. */
export class Scanner {
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

  /** A payload stored alone (layout 2): one value, at the depth an envelope's payload has. */
  payload(): void {
    this.value(0, false);
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
