/**
 * delayq writes and reads MessagePack itself (src/codec/msgpack-io.ts), so that its extension types stay
 * out of msgpackr's process-wide registry. msgpackr, which wrote the test vectors, is the reference here:
 * for random envelopes it must read our bytes as our reader does, and write what our reader read back as
 * exactly our bytes. msgpackr's registry is touched in this test process only.
 */
import fc from 'fast-check';
import { Packr, Unpackr, addExtension } from 'msgpackr';
import { beforeAll, describe, expect, it } from 'vitest';
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
} from '../../src/codec/msgpack-io.js';
import { MSGPACK_EXT, msgpackEnvelopeCodec } from '../../src/codec/msgpack.js';
import { envelope, payload } from './arbitraries.js';
import { seeded } from '../support/property-seed.js';

const ZERO = Buffer.from([0]);
// The options the codec used with msgpackr before it had a writer of its own.
const packr = new Packr({
  useRecords: false,
  structuredClone: false,
  moreTypes: false,
  variableMapSize: true,
  useToJSON: false,
  bundleStrings: false,
});
const unpackr = new Unpackr({
  useRecords: false,
  structuredClone: false,
  moreTypes: false,
  mapsAsObjects: true,
  int64AsType: 'number',
  copyBuffers: false,
});

beforeAll(() => {
  addExtension({
    Class: BigIntExt,
    type: MSGPACK_EXT.bigint,
    pack: (ext: BigIntExt) => bigintToBytes(ext.value),
    unpack: bigintFromBytes,
  });
  for (const [marker, type] of [
    [MAP_MARKER, MSGPACK_EXT.map],
    [SET_MARKER, MSGPACK_EXT.set],
    [NEGATIVE_ZERO, MSGPACK_EXT.negativeZero],
  ] as const) {
    addExtension({
      Class: marker.constructor,
      type,
      pack: () => ZERO,
      unpack: () => (marker === NEGATIVE_ZERO ? -0 : marker),
    });
  }
  addExtension({
    Class: BufferExt,
    type: MSGPACK_EXT.buffer,
    pack: (ext: BufferExt) => ext.bytes,
    unpack: (data: Uint8Array) => new BufferExt(Buffer.from(data)),
  });
});

/** The reader gives -0 and bigints; the writer is handed their wrappers (msgpackr writes -0 as 0, a bigint as int 64). */
function asWritten(tree: unknown): unknown {
  if (Object.is(tree, -0)) return NEGATIVE_ZERO;
  if (typeof tree === 'bigint') return new BigIntExt(tree);
  if (Array.isArray(tree)) return tree.map(asWritten);
  if (typeof tree === 'object' && tree !== null && Object.getPrototypeOf(tree) === Object.prototype) {
    return Object.fromEntries(Object.entries(tree).map(([k, v]) => [k, asWritten(v)]));
  }
  return tree;
}

describe('delayq’s MessagePack writer and reader against msgpackr', () => {
  it('msgpackr reads our bytes as our reader does, and writes that tree back as our bytes', () => {
    fc.assert(
      fc.property(envelope(payload), (env) => {
        const bytes = msgpackEnvelopeCodec.encode(env);
        const ours = readMsgpack(bytes);
        expect(unpackr.unpack(Buffer.from(bytes))).toStrictEqual(ours);
        expect(packr.pack(asWritten(ours)).toString('hex')).toBe(bytes.toString('hex'));
      }),
      seeded({ numRuns: 300 }),
    );
  });

  it('writes and reads the edges of every length and integer width, and the three timestamp forms, as msgpackr does', () => {
    const values: unknown[] = [
      ...[
        0,
        127,
        128,
        255,
        256,
        65535,
        65536,
        2 ** 32 - 1,
        2 ** 32,
        -1,
        -32,
        -33,
        -128,
        -129,
        -32768,
        -32769,
      ],
      ...[-(2 ** 31), -(2 ** 31) - 1, 1.5, 2 ** 53, -(2 ** 60), Number.NaN, Infinity, -Infinity],
      ...[31, 32, 255, 256, 65535, 65536].map((n) => 'x'.repeat(n)),
      ...[15, 16, 65535, 65536].map((n) => new Array<number>(n).fill(1)),
      ...[15, 16].map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))),
      ...[0, 255, 256, 65536].map((n) => new Uint8Array(n)),
      ...[0, 1, 2, 3, 4, 8, 16, 17, 256].map((n) => new BufferExt(Buffer.alloc(n, 7))),
      new Date(0),
      new Date(1_767_225_600_000),
      new Date(1_767_225_600_006),
      new Date(-1),
      new Date(-1_500),
      new Date(2 ** 34 * 1000 + 5),
      new Date(8.64e15),
      new Date(-8.64e15),
      new BigIntExt(2n ** 64n + 1n),
      new BigIntExt(-129n),
      undefined,
      null,
      true,
      false,
    ];
    for (const value of values) {
      const bytes = packr.pack(value);
      expect(readMsgpack(Buffer.from(bytes))).toStrictEqual(unpackr.unpack(Buffer.from(bytes)));
      expect(writeMsgpack(value).toString('hex')).toBe(bytes.toString('hex'));
    }
  });
});
