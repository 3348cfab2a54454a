/**
 * Round-trip properties of every built-in codec: whatever a codec accepts comes back as the same values of
 * the same types, and encoding is a function of the value (decoding and encoding again gives the same bytes).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Codec } from '../../src/codec/codec.js';
import { jsonCodec } from '../../src/codec/json.js';
import { msgpackCodec } from '../../src/codec/msgpack.js';
import { protobufCodec } from '../../src/codec/protobuf.js';
import { EmailSchema } from '../fixtures/proto/gen/email_pb.js';
import { emailMessage, envelope, payload } from './arbitraries.js';

const RUNS = { numRuns: 300 };

describe.each<[string, Codec]>([
  ['json', jsonCodec],
  ['msgpack', msgpackCodec],
])('%s codec round trips', (_name, codec) => {
  it('decodes every encoded envelope to an equal one, with the same types', () => {
    fc.assert(
      fc.property(envelope(payload), (env) => {
        expect(codec.decode(codec.encode(env))).toStrictEqual(env);
      }),
      RUNS,
    );
  });

  it('encodes a decoded envelope to the same bytes', () => {
    fc.assert(
      fc.property(envelope(payload), (env) => {
        const bytes = codec.encode(env);
        expect(codec.encode(codec.decode(bytes)).equals(bytes)).toBe(true);
      }),
      RUNS,
    );
  });

  it('keeps -0 apart from 0 and BigInts apart from numbers', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.double(), fc.bigInt())), (values) => {
        const decoded = codec.decode(
          codec.encode({ v: 1, id: 'j', version: 1, createdAt: 0, payload: values }),
        ).payload as unknown[];
        decoded.forEach((value, i) => {
          expect(typeof value).toBe(typeof values[i]);
          expect(Object.is(value, values[i])).toBe(true);
        });
      }),
      RUNS,
    );
  });
});

describe('protobuf codec round trips', () => {
  const codec = protobufCodec(EmailSchema);

  it('decodes every encoded envelope to an equal one, with the same message', () => {
    fc.assert(
      fc.property(envelope(emailMessage), (env) => {
        expect(codec.decode(codec.encode(env))).toStrictEqual(env);
      }),
      RUNS,
    );
  });

  it('encodes a decoded envelope to the same bytes', () => {
    fc.assert(
      fc.property(envelope(emailMessage), (env) => {
        const bytes = codec.encode(env);
        expect(codec.encode(codec.decode(bytes)).equals(bytes)).toBe(true);
      }),
      RUNS,
    );
  });
});
