/**
 * Round-trip properties of every built-in codec: whatever a codec accepts comes back as the same values of
 * the same types, and encoding is a function of the value (decoding and encoding again gives the same bytes).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Codec } from '../../src/codec/codec.js';
import { jsonCodec } from '../../src/codec/json.js';
import { envelopeCodecFor } from '../../src/codec/legacy-envelope.js';
import { msgpackCodec } from '../../src/codec/msgpack.js';
import { protobufCodec } from '../../src/codec/protobuf.js';
import { EmailSchema } from '../fixtures/proto/gen/email_pb.js';
import { emailMessage, envelope, payload } from './arbitraries.js';
import { seeded } from '../support/property-seed.js';

const RUNS = seeded({ numRuns: 300 });

describe.each<[string, Codec]>([
  ['json', jsonCodec],
  ['msgpack', msgpackCodec],
])('%s codec round trips', (_name, codec) => {
  it('decodes every encoded payload to an equal one, with the same types', () => {
    fc.assert(
      fc.property(payload, (value) => {
        expect(codec.decodePayload(codec.encodePayload(value))).toStrictEqual(value);
      }),
      RUNS,
    );
  });

  it('encodes a decoded payload to the same bytes', () => {
    fc.assert(
      fc.property(payload, (value) => {
        const bytes = codec.encodePayload(value);
        expect(codec.encodePayload(codec.decodePayload(bytes)).equals(bytes)).toBe(true);
      }),
      RUNS,
    );
  });

  it('reads layout-1 envelopes of every payload (delayq migrate)', () => {
    const legacy = envelopeCodecFor(codec);
    fc.assert(
      fc.property(envelope(payload), (env) => {
        expect(legacy.decode(legacy.encode(env))).toStrictEqual(env);
      }),
      RUNS,
    );
  });

  it('keeps -0 apart from 0 and BigInts apart from numbers', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.double(), fc.bigInt())), (values) => {
        const decoded = codec.decodePayload(codec.encodePayload(values)) as unknown[];
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

  it('decodes every encoded payload to an equal message', () => {
    fc.assert(
      fc.property(emailMessage, (message) => {
        expect(codec.decodePayload(codec.encodePayload(message))).toStrictEqual(message);
      }),
      RUNS,
    );
  });

  it('reads layout-1 envelopes of every message (delayq migrate)', () => {
    fc.assert(
      fc.property(envelope(emailMessage), (env) => {
        expect(codec.envelope.decode(codec.envelope.encode(env))).toStrictEqual(env);
      }),
      RUNS,
    );
  });

  it('encodes a decoded payload to the same bytes', () => {
    fc.assert(
      fc.property(emailMessage, (message) => {
        const bytes = codec.encodePayload(message);
        expect(codec.encodePayload(codec.decodePayload(bytes)).equals(bytes)).toBe(true);
      }),
      RUNS,
    );
  });
});
