import { describe, expect, it } from 'vitest';
import { EmailSchema } from '../../test/fixtures/proto/gen/email_pb.js';
import { DecodeError, PayloadTooLargeError, ValidationError } from '../errors.js';
import type { Codec } from './codec.js';
import { decodeEnvelope, encodeEnvelope, resolveCodec } from './envelope.js';
import { jsonCodec } from './json.js';
import { msgpackCodec } from './msgpack.js';
import { protobufCodec } from './protobuf.js';

describe('resolveCodec', () => {
  it('resolves the built-in names, json by default', () => {
    expect(resolveCodec(undefined)).toBe(jsonCodec);
    expect(resolveCodec('json')).toBe(jsonCodec);
    expect(resolveCodec('msgpack')).toBe(msgpackCodec);
  });

  it('passes codec objects through, protobuf included', () => {
    const protobuf = protobufCodec(EmailSchema);
    expect(resolveCodec(protobuf)).toBe(protobuf);
  });

  it('refuses an unknown name, pointing protobuf users to protobufCodec', () => {
    expect(() => resolveCodec('protobuf' as 'json')).toThrow(ValidationError);
    expect(() => resolveCodec('protobuf' as 'json')).toThrow(
      `codec must be 'json', 'msgpack' or an object with encode(envelope) and decode(bytes) (for protobuf: protobufCodec(YourMessageSchema)), got "protobuf"`,
    );
    expect(() => resolveCodec({ name: 'x' } as Codec)).toThrow(/got an object$/);
  });
});

describe('encodeEnvelope and decodeEnvelope with every built-in codec', () => {
  for (const codec of [jsonCodec, msgpackCodec]) {
    it(`${codec.name}: enforces the size limit and checks the stored id`, () => {
      const bytes = encodeEnvelope(codec, { id: 'a', version: 1, payload: { big: 'x'.repeat(100) } }, 1000);
      expect(decodeEnvelope(codec, bytes, 'a').payload).toStrictEqual({ big: 'x'.repeat(100) });
      expect(() => encodeEnvelope(codec, { id: 'a', version: 1, payload: 'x'.repeat(100) }, 50)).toThrow(
        PayloadTooLargeError,
      );
      expect(() => decodeEnvelope(codec, bytes, 'b')).toThrow(DecodeError);
      expect(() => decodeEnvelope(codec, bytes, 'b')).toThrow(
        `job b could not be decoded with codec '${codec.name}': envelope names job "a", stored as "b"`,
      );
    });
  }
});
