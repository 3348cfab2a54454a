/**
 * The committed payload vectors: every codec encodes each described payload to exactly the stored
 * bytes (what follows a record's header, docs/PROTOCOL.md) and decodes the bytes back to the same
 * value. The bytes are those of delayq 0.1's envelopes' payloads, cut out of its vectors unchanged:
 * layout 2 stores the same payload bytes without the envelope around them.
 */
import { readFileSync } from 'node:fs';
import { fromJson, toJson, type JsonValue } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import type { Codec } from '../../src/codec/codec.js';
import { jsonCodec } from '../../src/codec/json.js';
import { msgpackCodec } from '../../src/codec/msgpack.js';
import { protobufCodec } from '../../src/codec/protobuf.js';
import { EmailSchema } from '../fixtures/proto/gen/email_pb.js';

interface Vector {
  name: string;
  description: string;
  /** json, msgpack: the payload in the json codec's wire form; protobuf: the proto3 JSON mapping. */
  payload: JsonValue;
  hex: string;
}

interface VectorFile {
  codec: string;
  payloadType?: string;
  vectors: Vector[];
}

function load(codec: string): VectorFile {
  const file = JSON.parse(readFileSync(new URL(`./${codec}.json`, import.meta.url), 'utf8')) as VectorFile;
  expect(file.codec).toBe(codec);
  expect(file.vectors.length).toBeGreaterThanOrEqual(3);
  return file;
}

/** The value a json/msgpack description stands for: it is written in the json codec's wire form. */
function fromDescription(payload: JsonValue): unknown {
  return jsonCodec.decodePayload(Buffer.from(JSON.stringify(payload)));
}

describe.each<[string, Codec]>([
  ['json', jsonCodec],
  ['msgpack', msgpackCodec],
])('%s test vectors', (name, codec) => {
  const { vectors } = load(name);
  for (const vector of vectors) {
    it(`${vector.name}: encodes to exactly the stored bytes and decodes them back`, () => {
      const expected = fromDescription(vector.payload);
      expect(codec.encodePayload(expected).toString('hex')).toBe(vector.hex);
      expect(codec.decodePayload(Buffer.from(vector.hex, 'hex'))).toStrictEqual(expected);
    });
  }

  if (name === 'json') {
    it('stores the description itself as the bytes', () => {
      for (const vector of vectors) {
        expect(Buffer.from(vector.hex, 'hex').toString('utf8')).toBe(JSON.stringify(vector.payload));
      }
    });
  }
});

describe('protobuf test vectors', () => {
  const file = load('protobuf');
  const codec = protobufCodec(EmailSchema);

  it('name the payload type they were written with', () => {
    expect(file.payloadType).toBe(EmailSchema.typeName);
  });

  for (const vector of file.vectors) {
    it(`${vector.name}: encodes to exactly the stored bytes and decodes them back`, () => {
      const payload = fromJson(EmailSchema, vector.payload);
      expect(codec.encodePayload(payload).toString('hex')).toBe(vector.hex);
      const decoded = codec.decodePayload(Buffer.from(vector.hex, 'hex'));
      expect(decoded).toStrictEqual(payload);
      expect(toJson(EmailSchema, decoded as typeof payload)).toStrictEqual(vector.payload);
    });
  }
});
