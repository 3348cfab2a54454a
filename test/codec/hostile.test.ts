/**
 * Hostile input against every built-in codec: bytes crafted to pollute prototypes, truncated, corrupted or
 * random bytes, and another codec's bytes. Decoding either returns an envelope or throws DecodeError; it
 * never throws anything else, never touches a prototype and never evaluates anything.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { Codec, Envelope } from '../../src/codec/codec.js';
import { jsonCodec } from '../../src/codec/json.js';
import { envelopeCodecFor } from '../../src/codec/legacy-envelope.js';
import { msgpackCodec } from '../../src/codec/msgpack.js';
import { protobufCodec } from '../../src/codec/protobuf.js';
import { DecodeError } from '../../src/errors.js';
import { EmailSchema, RecipientSchema } from '../fixtures/proto/gen/email_pb.js';
import { emailMessage, envelope, payload } from './arbitraries.js';
import { seeded } from '../support/property-seed.js';

const protobuf = protobufCodec(EmailSchema);
const codecs: [string, Codec, fc.Arbitrary<Envelope>][] = [
  ['json', jsonCodec, envelope(payload)],
  ['msgpack', msgpackCodec, envelope(payload)],
  ['protobuf', protobuf, envelope(emailMessage)],
];

const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();

function expectPrototypesUntouched(): void {
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toStrictEqual(prototypeNames);
  expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  expect(Object.getOwnPropertyNames(Array.prototype)).not.toContain('polluted');
}

const BUILT_IN_PROTOTYPES = new Set<unknown>([
  Object.prototype,
  Array.prototype,
  Map.prototype,
  Set.prototype,
  Date.prototype,
  Uint8Array.prototype,
  Buffer.prototype,
]);

/** Every object reachable from `value` has its built-in prototype: no key set a prototype of its own. */
function expectOnlyBuiltInPrototypes(value: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  expect(BUILT_IN_PROTOTYPES.has(Object.getPrototypeOf(value))).toBe(true);
  const children =
    value instanceof Map
      ? [...value].flat()
      : value instanceof Set
        ? [...value]
        : ArrayBuffer.isView(value) || value instanceof Date
          ? []
          : Object.values(value);
  for (const child of children) expectOnlyBuiltInPrototypes(child);
}

/** Decodes, and checks that the only possible failure is a DecodeError. */
function tryDecode(codec: Codec, bytes: Buffer): Envelope | DecodeError {
  try {
    return envelopeCodecFor(codec).decode(bytes);
  } catch (e) {
    expect(e).toBeInstanceOf(DecodeError);
    return e as DecodeError;
  }
}

function decodeError(codec: Codec, bytes: Buffer): DecodeError {
  const result = tryDecode(codec, bytes);
  expect(result).toBeInstanceOf(DecodeError);
  return result as DecodeError;
}

afterEach(() => {
  delete (Object.prototype as Record<string, unknown>).polluted;
});

// ---------------------------------------------------------------------------------------------------------
// Crafted bytes, per codec.

function mpStr(s: string): string {
  const bytes = Buffer.from(s);
  return (0xa0 + bytes.length).toString(16) + bytes.toString('hex');
}

function mpEnvelope(payloadHex: string, extraHex = '', extraCount = 0): Buffer {
  return Buffer.from(
    `8${5 + extraCount}${mpStr('v')}01${mpStr('id')}${mpStr('j')}${mpStr('version')}01${mpStr('createdAt')}05${extraHex}${mpStr('payload')}${payloadHex}`,
    'hex',
  );
}

const mpPolluter = `81${mpStr('polluted')}c3`;

function pbEnvelope(payloadBytes: Uint8Array): Buffer {
  const w = new BinaryWriter();
  w.tag(1, WireType.Varint).uint32(1).tag(2, WireType.LengthDelimited).string('j');
  w.tag(3, WireType.Varint).uint32(1).tag(6, WireType.LengthDelimited).bytes(payloadBytes);
  return Buffer.from(w.finish());
}

function pbMapEntry(field: number, key: string, value: Uint8Array | string): Uint8Array {
  const entry = new BinaryWriter().tag(1, WireType.LengthDelimited).string(key);
  if (typeof value === 'string') entry.tag(2, WireType.LengthDelimited).string(value);
  else entry.tag(2, WireType.LengthDelimited).bytes(value);
  return new BinaryWriter().tag(field, WireType.LengthDelimited).bytes(entry.finish()).finish();
}

const pollutionAttempts: [string, Codec, Buffer][] = [
  ['json: __proto__ in the envelope', jsonCodec, Buffer.from('{"__proto__":{"polluted":1},"v":1}')],
  [
    'json: __proto__ in the payload',
    jsonCodec,
    Buffer.from('{"v":1,"id":"j","version":1,"createdAt":5,"payload":{"a":[{"__proto__":{"polluted":1}}]}}'),
  ],
  [
    'json: constructor.prototype in the payload',
    jsonCodec,
    Buffer.from(
      '{"v":1,"id":"j","version":1,"createdAt":5,"payload":{"constructor":{"prototype":{"polluted":1}}}}',
    ),
  ],
  [
    'json: __proto__ as a Map key and in a Map value',
    jsonCodec,
    Buffer.from(
      '{"v":1,"id":"j","version":1,"createdAt":5,"payload":{"~t":"Map","v":[["__proto__",{"__proto__":{"polluted":1}}]]}}',
    ),
  ],
  [
    'msgpack: __proto__ in the envelope',
    msgpackCodec,
    mpEnvelope('c0', `${mpStr('__proto__')}${mpPolluter}`, 1),
  ],
  [
    'msgpack: __proto__ in the payload',
    msgpackCodec,
    mpEnvelope(`91${`81${mpStr('__proto__')}${mpPolluter}`}`),
  ],
  [
    'msgpack: constructor.prototype in the payload',
    msgpackCodec,
    mpEnvelope(`81${mpStr('constructor')}81${mpStr('prototype')}${mpPolluter}`),
  ],
  [
    'msgpack: __proto__ through a msgpackr record definition',
    msgpackCodec,
    mpEnvelope(`d47240${`91${mpStr('__proto__')}`}${mpPolluter}`),
  ],
  ['msgpack: __proto__ as a Map key', msgpackCodec, mpEnvelope(`93d45100${mpStr('__proto__')}${mpPolluter}`)],
  [
    'protobuf: __proto__ and constructor as map keys',
    protobuf,
    pbEnvelope(
      Buffer.concat([
        pbMapEntry(9, '__proto__', 'polluted'),
        pbMapEntry(9, 'constructor', 'x'),
        pbMapEntry(16, '__proto__', toBinary(RecipientSchema, create(RecipientSchema, { name: 'polluted' }))),
      ]),
    ),
  ],
];

describe('decoding never pollutes prototypes', () => {
  for (const [name, codec, bytes] of pollutionAttempts) {
    it(name, () => {
      const result = tryDecode(codec, bytes);
      expectPrototypesUntouched();
      if (!(result instanceof DecodeError)) expectOnlyBuiltInPrototypes(result.payload);
    });
  }

  it('refuses every __proto__ key the json and msgpack codecs could meet, naming it', () => {
    expect(decodeError(jsonCodec, pollutionAttempts[1]![2]).message).toContain('"__proto__"');
    expect(decodeError(msgpackCodec, pollutionAttempts[5]![2]).message).toContain('"__proto__"');
    expect(decodeError(msgpackCodec, pollutionAttempts[7]![2]).message).toContain('extension of type 114');
  });
});

// ---------------------------------------------------------------------------------------------------------
// Malformed payload bytes (layout 2 stores the payload alone after the record header), every codec.

/** Decodes a payload, and checks that the only possible failure is a DecodeError. */
function tryDecodePayload(codec: Codec, bytes: Buffer): void {
  try {
    codec.decodePayload(bytes);
  } catch (e) {
    expect(e).toBeInstanceOf(DecodeError);
  }
}

describe.each(codecs)('%s codec with malformed payload bytes', (_name, codec, envelopes) => {
  it('decodes every truncation, corruption or random bytes to a value or a DecodeError, nothing else', () => {
    fc.assert(
      fc.property(
        envelopes,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.uint8Array({ maxLength: 64 }),
        (env, edits, random) => {
          const bytes = codec.encodePayload(env.payload);
          for (let end = 0; end < bytes.length; end += Math.max(1, Math.floor(bytes.length / 16))) {
            tryDecodePayload(codec, bytes.subarray(0, end));
          }
          const corrupted = Buffer.from(bytes);
          for (const [at, value] of edits) if (corrupted.length > 0) corrupted[at % corrupted.length] = value;
          tryDecodePayload(codec, corrupted);
          tryDecodePayload(codec, Buffer.from(random));
          expectPrototypesUntouched();
        },
      ),
      seeded({ numRuns: 200 }),
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
// Malformed envelope bytes (layout 1, read by delayq migrate), every codec.

describe.each(codecs)('%s codec with malformed bytes', (_name, codec, envelopes) => {
  it('refuses every truncation of a valid envelope with a DecodeError', () => {
    fc.assert(
      fc.property(envelopes, (env) => {
        const bytes = envelopeCodecFor(codec).encode(env);
        const step = Math.max(1, Math.floor(bytes.length / 64));
        for (let end = 0; end < bytes.length; end += step) decodeError(codec, bytes.subarray(0, end));
        decodeError(codec, bytes.subarray(0, bytes.length - 1));
      }),
      seeded({ numRuns: 100 }),
    );
  });

  it('decodes corrupted bytes to an envelope or a DecodeError, nothing else', () => {
    fc.assert(
      fc.property(
        envelopes,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        (env, edits) => {
          const bytes = Buffer.from(envelopeCodecFor(codec).encode(env));
          for (const [at, value] of edits) bytes[at % bytes.length] = value;
          tryDecode(codec, bytes);
          expectPrototypesUntouched();
        },
      ),
      seeded({ numRuns: 300 }),
    );
  });

  it('decodes random bytes to an envelope or a DecodeError, nothing else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        tryDecode(codec, Buffer.from(bytes));
        expectPrototypesUntouched();
      }),
      seeded({ numRuns: 500 }),
    );
  });

  it('refuses the other codecs’ bytes', () => {
    const env = { v: 1, id: 'j', version: 1, createdAt: 5, payload: create(EmailSchema, { to: 'x' }) };
    for (const [, other] of codecs) {
      if (other === codec) continue;
      // json and msgpack would store the message as a plain object, so give them one.
      const bytes = envelopeCodecFor(other).encode(
        other === protobuf ? env : { ...env, payload: { to: 'x' } },
      );
      decodeError(codec, bytes);
    }
  });

  it('refuses deeply nested input without overflowing the stack', () => {
    const deep: Record<string, Buffer> = {
      json: Buffer.from(`{"v":1,"id":"j","version":1,"createdAt":5,"payload":${'['.repeat(200_000)}`),
      msgpack: mpEnvelope(`${'91'.repeat(200_000)}c0`),
      // An unknown group field nested 200 000 times inside the payload.
      protobuf: pbEnvelope(Buffer.from('a3'.repeat(200_000), 'hex')),
    };
    decodeError(codec, deep[codec.name]!);
  });
});
