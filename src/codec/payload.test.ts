import { create, toBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { EmailSchema } from '../../test/fixtures/proto/gen/email_pb.js';
import { DecodeError, EncodeError, PayloadTooLargeError, ValidationError } from '../errors.js';
import type { Codec } from './codec.js';
import { jsonCodec } from './json.js';
import { decodeEnvelope, encodeEnvelope } from './legacy-envelope.js';
import { msgpackCodec } from './msgpack.js';
import { decodeJobPayload, encodeJobPayload, encodeJsonJobPayload, resolveCodec } from './payload.js';
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

  it('refuses an unknown name, and a layout-1 codec object (encode/decode of envelopes)', () => {
    expect(() => resolveCodec('protobuf' as 'json')).toThrow(ValidationError);
    expect(() => resolveCodec('protobuf' as 'json')).toThrow(
      /codec must be 'json', 'msgpack' or an object with encodePayload\(payload\) and decodePayload\(bytes\)/,
    );
    const layout1 = { name: 'old', encode: () => Buffer.alloc(0), decode: () => ({}) };
    expect(() => resolveCodec(layout1 as unknown as Codec)).toThrow(/got an object$/);
  });
});

describe('payloads alone, through every built-in codec', () => {
  for (const codec of [jsonCodec, msgpackCodec]) {
    it(`${codec.name}: round trip, size limit, errors naming the job`, () => {
      const payload = { to: 'ada@example.com', at: new Date(0), n: 10n };
      const bytes = encodeJobPayload(codec, 'j1', payload, 1000);
      expect(decodeJobPayload(codec, bytes, 'j1')).toStrictEqual(payload);
      expect(() => encodeJobPayload(codec, 'j1', 'x'.repeat(100), 50)).toThrow(PayloadTooLargeError);
      expect(() => encodeJobPayload(codec, 'j1', { f: () => 1 }, 1000)).toThrow(EncodeError);
      expect(() => decodeJobPayload(codec, Buffer.from([0xc1]), 'j9')).toThrow(DecodeError);
      expect(() => decodeJobPayload(codec, Buffer.from([0xc1]), 'j9')).toThrow(
        new RegExp(`^job j9 could not be decoded with codec '${codec.name}'`),
      );
    });

    it(`${codec.name}: decodes a payload that is a view into a larger record`, () => {
      const bytes = codec.encodePayload([1, 'two']);
      const record = Buffer.concat([Buffer.from([1, 0]), bytes, Buffer.from('trailing')]);
      expect(codec.decodePayload(record.subarray(2, 2 + bytes.length))).toStrictEqual([1, 'two']);
    });
  }

  it('json: the payload bytes are the tagged JSON of the payload alone, no envelope', () => {
    expect(jsonCodec.encodePayload({ to: 'ada@example.com' }).toString()).toBe('{"to":"ada@example.com"}');
    expect(jsonCodec.encodePayload(new Date(0)).toString()).toBe(
      '{"~t":"Date","v":"1970-01-01T00:00:00.000Z"}',
    );
  });

  it('json as text (the add path): the text of the same bytes, the same size limit in UTF-8 bytes and errors', () => {
    for (const payload of [{ to: 'ada@example.com', n: 10n }, 'ü€𝄞', new Date(0), [undefined, null]]) {
      expect(Buffer.from(encodeJsonJobPayload('j1', payload, 1000))).toStrictEqual(
        encodeJobPayload(jsonCodec, 'j1', payload, 1000),
      );
    }
    // '"' + 20 × 'é' + '"': 22 code units, 42 bytes.
    expect(encodeJsonJobPayload('j1', 'é'.repeat(20), 42)).toBe(`"${'é'.repeat(20)}"`);
    expect(() => encodeJsonJobPayload('j1', 'é'.repeat(20), 41)).toThrow(new PayloadTooLargeError(42, 41));
    expect(() => encodeJobPayload(jsonCodec, 'j1', 'é'.repeat(20), 41)).toThrow(
      new PayloadTooLargeError(42, 41),
    );
    const throwing = {
      get boom(): never {
        throw new TypeError('no');
      },
    };
    for (const bad of [{ f: () => 1 }, throwing, { big: 1n, self: {} as unknown }]) {
      if ('self' in bad) bad.self = bad;
      let viaBuffer: unknown;
      try {
        encodeJobPayload(jsonCodec, 'j1', bad, 1000);
      } catch (err) {
        viaBuffer = err;
      }
      expect(viaBuffer).toBeInstanceOf(EncodeError);
      expect(() => encodeJsonJobPayload('j1', bad, 1000)).toThrow(viaBuffer);
    }
  });

  it('protobuf: the serialized payload message alone, equal to toBinary; a non-message is refused', () => {
    const codec = protobufCodec(EmailSchema);
    const email = create(EmailSchema, { to: 'ada@example.com', subject: 'hi' });
    const bytes = codec.encodePayload(email);
    expect(bytes.equals(Buffer.from(toBinary(EmailSchema, email)))).toBe(true);
    expect(codec.decodePayload(bytes)).toMatchObject({ to: 'ada@example.com', subject: 'hi' });
    expect(() => codec.encodePayload({ to: 1 })).toThrow(EncodeError);
  });
});

describe('legacy envelopes (for delayq migrate)', () => {
  it('the built-in codecs still read and write layout-1 envelopes', () => {
    for (const codec of [jsonCodec, msgpackCodec]) {
      const bytes = encodeEnvelope(codec, { id: 'old', version: 2, payload: { a: 1 }, createdAt: 5 });
      expect(decodeEnvelope(codec, bytes, 'old')).toStrictEqual({
        v: 1,
        id: 'old',
        version: 2,
        payload: { a: 1 },
        createdAt: 5,
      });
      expect(() => decodeEnvelope(codec, bytes, 'other')).toThrow(DecodeError);
    }
  });

  it('a custom codec has no envelope reader, and says so', () => {
    const custom: Codec = { name: 'mine', encodePayload: () => Buffer.alloc(0), decodePayload: () => null };
    expect(() => decodeEnvelope(custom, Buffer.from('{}'), 'x')).toThrow(/has no layout-1 envelope reader/);
  });
});
