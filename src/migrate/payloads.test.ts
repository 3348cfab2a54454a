/**
 * A 0.1 envelope through payloadConverter comes out as the payload bytes the same codec writes in
 * layout 2, with the envelope's fields for the header, for every built-in codec and the values that
 * are easiest to alter silently (Date, BigInt, Map, -0, bytes); an envelope that does not decode, or
 * names another job, is an error naming the job, never a guess.
 */
import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import type { Codec } from '../codec/codec.js';
import { jsonCodec } from '../codec/json.js';
import { encodeEnvelope } from '../codec/legacy-envelope.js';
import { msgpackCodec } from '../codec/msgpack.js';
import { protobufCodec } from '../codec/protobuf.js';
import { DecodeError } from '../errors.js';
import { EmailSchema } from '../../test/fixtures/proto/gen/email_pb.js';
import { migrationCodec } from './codecs.js';
import { payloadConverter, templateConverter } from './payloads.js';

const tricky = {
  at: new Date('2026-01-02T03:04:05.006Z'),
  big: 2n ** 70n,
  map: new Map<unknown, unknown>([[1, 'one']]),
  negZero: -0,
  bytes: new Uint8Array([0, 255]),
  nothing: undefined,
};

describe.each<[string, Codec, unknown]>([
  ['json', jsonCodec, tricky],
  ['msgpack', msgpackCodec, tricky],
  ['protobuf', protobufCodec(EmailSchema), create(EmailSchema, { to: 'ada@example.com', tags: ['a'] })],
])('%s', (_name, codec, payload) => {
  const { envelopes, payloads } = migrationCodec(codec);
  const convert = payloadConverter(envelopes, payloads);

  it('gives the payload bytes layout 2 writes, and the envelope fields for the header', () => {
    const envelope = encodeEnvelope(codec, {
      id: 'j1',
      version: 3,
      payload,
      createdAt: 1767225600123,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    const converted = convert(envelope, 'j1');
    expect(converted.payload).toEqual(codec.encodePayload(payload));
    expect(converted).toMatchObject({
      version: 3,
      createdAt: 1767225600123,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    expect(codec.decodePayload(converted.payload)).toStrictEqual(payload);
  });

  it('converts a schedule template, stored under the id <name>@template', () => {
    const template = encodeEnvelope(codec, { id: 'daily@template', version: 4, payload, createdAt: 0 });
    expect(templateConverter(envelopes, payloads)(template, 'daily')).toEqual({
      template: codec.encodePayload(payload),
      version: 4,
    });
  });

  it('refuses an envelope of another job, and bytes that are no envelope, naming the job', () => {
    const other = encodeEnvelope(codec, { id: 'j2', version: 1, payload, createdAt: 1 });
    expect(() => convert(other, 'j1')).toThrow(/stored as j1 names "j2"/);
    expect(() => convert(Buffer.from([0xc1, 0xff, 0x00]), 'j1')).toThrow(DecodeError);
    expect(() => convert(Buffer.from([0xc1, 0xff, 0x00]), 'j1')).toThrow(/v1 envelope of j1/);
  });
});
