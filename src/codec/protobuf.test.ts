import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { afterEach, describe, expect, it } from 'vitest';
import {
  EmailSchema,
  Priority,
  RecipientSchema,
  type Email,
  type Recipient,
} from '../../test/fixtures/proto/gen/email_pb.js';
import { EnvelopeSchema } from '../../test/fixtures/proto/gen/envelope_pb.js';
import { DecodeError, EncodeError, ValidationError } from '../errors.js';
import { ENVELOPE_FORMAT, type Envelope } from './codec.js';
import { PROTOBUF_ENVELOPE_FIELDS, PROTOBUF_MAX_DEPTH, protobufCodec } from './protobuf.js';

const codec = protobufCodec(EmailSchema);

function email(init: MessageInitShape<typeof EmailSchema> = {}): Email {
  return create(EmailSchema, init);
}

function envelope(payload: unknown, extra: Partial<Envelope> = {}): Envelope {
  return { v: ENVELOPE_FORMAT, id: 'job-1', version: 1, createdAt: 1767225600000, payload, ...extra };
}

/** Envelope bytes written field by field, to craft what the encoder never writes. */
function bytesOf(write: (w: BinaryWriter) => void): Buffer {
  const w = new BinaryWriter();
  write(w);
  return Buffer.from(w.finish());
}

const PAYLOAD = toBinary(EmailSchema, email({ to: 'a@b.c' }));
const valid = (w: BinaryWriter): BinaryWriter =>
  w
    .tag(1, WireType.Varint)
    .uint32(1)
    .tag(2, WireType.LengthDelimited)
    .string('job-1')
    .tag(3, WireType.Varint)
    .uint32(1);

function encodeError(payload: unknown, extra: Partial<Envelope> = {}): EncodeError {
  try {
    codec.envelope.encode(envelope(payload, extra));
  } catch (e) {
    expect(e).toBeInstanceOf(EncodeError);
    return e as EncodeError;
  }
  throw new Error('encode did not throw');
}

function decodeError(bytes: Buffer): DecodeError {
  try {
    codec.envelope.decode(bytes);
  } catch (e) {
    expect(e).toBeInstanceOf(DecodeError);
    return e as DecodeError;
  }
  throw new Error('decode did not throw');
}

function chain(depth: number): Recipient {
  let r = create(RecipientSchema, { address: 'last' });
  for (let i = 1; i < depth; i++) r = create(RecipientSchema, { forwardedTo: r });
  return r;
}

afterEach(() => {
  delete (Object.prototype as Record<string, unknown>).polluted;
});

describe('protobufCodec envelope', () => {
  it('is named protobuf and keeps its schema', () => {
    expect(codec.name).toBe('protobuf');
    expect(codec.schema).toBe(EmailSchema);
  });

  it('writes exactly the bytes generated code for envelope.proto writes', () => {
    const payload = email({ to: 'x', userId: -1n });
    for (const extra of [{}, { traceparent: 'tp' }, { id: '', createdAt: 0 }, { version: 2 ** 32 - 1 }]) {
      const env = envelope(payload, extra);
      const generated = toBinary(
        EnvelopeSchema,
        create(EnvelopeSchema, {
          v: env.v,
          id: env.id,
          version: env.version,
          createdAt: BigInt(env.createdAt),
          payload: toBinary(EmailSchema, payload),
          ...(env.traceparent === undefined ? {} : { traceparent: env.traceparent }),
        }),
      );
      expect(codec.envelope.encode(env).toString('hex')).toBe(Buffer.from(generated).toString('hex'));
    }
  });

  it('writes the payload field even when the message serializes to nothing', () => {
    const bytes = codec.envelope.encode(envelope(email(), { id: '', createdAt: 0 }));
    expect(bytes.toString('hex')).toBe('080118013200');
    expect(codec.envelope.decode(bytes)).toStrictEqual(envelope(email(), { id: '', createdAt: 0 }));
  });

  it('round-trips every envelope field, with and without traceparent', () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const withTrace = envelope(email({ to: 'a' }), { traceparent: tp, version: 3, id: 'x:y' });
    expect(codec.envelope.decode(codec.envelope.encode(withTrace))).toStrictEqual(withTrace);
    const decoded = codec.envelope.decode(codec.envelope.encode(envelope(email(), { createdAt: -5 })));
    expect(decoded).toStrictEqual(envelope(email(), { createdAt: -5 }));
    expect('traceparent' in decoded).toBe(false);
  });

  it('round-trips a payload with every kind of field', () => {
    const payload = email({
      to: 'ünïcödé 😀',
      subject: '',
      body: 'b'.repeat(300),
      userId: -(2n ** 63n),
      quota: 2n ** 64n - 1n,
      attachment: new Uint8Array([0, 255, 7]),
      sendAfter: timestampFromDate(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6))),
      tags: ['a', '', 'c'],
      headers: { 'x-a': '1', '': 'empty' },
      cc: [{ address: 'c@d', forwardedTo: { address: 'e@f' } }],
      score: -0,
      urgent: true,
      priority: Priority.HIGH,
      retries: -3,
      traceId: 2n ** 63n,
      aliases: { boss: { name: 'B' } },
      target: { case: 'single', value: { address: 's@t' } },
    });
    const decoded = codec.envelope.decode(codec.envelope.encode(envelope(payload))).payload as Email;
    expect(decoded).toStrictEqual(payload);
    expect(Object.is(decoded.score, -0)).toBe(true);
  });

  it('returns bytes fields as Uint8Arrays of their own, not views of the stored bytes', () => {
    const stored = codec.envelope.encode(envelope(email({ attachment: new Uint8Array([1, 2, 3]) })));
    const decoded = codec.envelope.decode(stored).payload as Email;
    expect(Object.getPrototypeOf(decoded.attachment)).toBe(Uint8Array.prototype);
    stored.fill(0);
    expect([...decoded.attachment]).toStrictEqual([1, 2, 3]);
  });

  it('keeps unknown payload fields, so a newer producer’s fields survive an older worker', () => {
    const newer = bytesOf((w) =>
      w.tag(1, WireType.LengthDelimited).string('to').tag(99, WireType.Varint).uint32(7),
    );
    const bytes = bytesOf((w) => valid(w).tag(6, WireType.LengthDelimited).bytes(newer));
    const decoded = codec.envelope.decode(bytes);
    expect((decoded.payload as Email).to).toBe('to');
    const reencoded = codec.envelope.encode({ ...decoded, createdAt: 0 });
    expect(reencoded.toString('hex')).toBe(bytes.toString('hex'));
  });

  it('nests up to PROTOBUF_MAX_DEPTH messages, the payload counting as one', () => {
    const deepest = email({ cc: [chain(PROTOBUF_MAX_DEPTH - 1)] });
    expect(codec.envelope.decode(codec.envelope.encode(envelope(deepest))).payload).toStrictEqual(deepest);
  });

  it('refuses a schema that is not a message descriptor', () => {
    expect(() => protobufCodec({} as typeof EmailSchema)).toThrow(ValidationError);
    expect(() => protobufCodec(undefined as unknown as typeof EmailSchema)).toThrow(
      /protobufCodec\(schema\) needs the message descriptor protoc-gen-es generated/,
    );
  });
});

describe('protobufCodec encode refusals', () => {
  it('refuses a payload that is not a message of the schema, saying how to build one', () => {
    expect(encodeError({ to: 'x' }).message).toBe(
      'cannot encode job job-1: payload is a plain object without "$typeName", not a delayq.test.v1.Email message; build it with create(EmailSchema, { ... }) from @bufbuild/protobuf',
    );
    expect(encodeError(create(RecipientSchema)).message).toContain(
      'payload is a delayq.test.v1.Recipient message, not a delayq.test.v1.Email message',
    );
    expect(encodeError('text').message).toContain('payload is the string "text", not a delayq.test.v1.Email');
  });

  it('refuses field values protobuf-es would write changed, naming the field', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ to: 5 }, 'payload.to is number 5, but the field is a string'],
      [{ to: undefined }, 'payload.to is undefined, but the field is a string'],
      [{ userId: 5 }, 'payload.userId is number 5, but the field is an int64 (a bigint)'],
      [{ quota: -1n }, 'payload.quota is bigint -1, out of range for a uint64 (a bigint)'],
      [
        { attachment: 'abc' },
        'payload.attachment is the string "abc", but the field is bytes (a Uint8Array)',
      ],
      [{ urgent: 1 }, 'payload.urgent is number 1, but the field is a bool'],
      [{ retries: 1.5 }, 'payload.retries is number 1.5, but the field is an int32 (an integer number)'],
      [{ priority: 'HIGH' }, 'payload.priority is the string "HIGH", not an enum value (an int32)'],
      [{ tags: 'a' }, 'payload.tags is the string "a", not an array (a repeated field)'],
      [{ tags: ['a', 2] }, 'payload.tags[1] is number 2, but the field is a string'],
      [{ headers: { a: 1 } }, 'payload.headers.a is number 1, but the field is a string'],
      [
        { cc: [{ address: 'x' }] },
        'payload.cc[0] is a plain object without "$typeName", not a delayq.test.v1.Recipient',
      ],
      [
        { target: { case: 'nope', value: 1 } },
        'payload.target has the case the string "nope", which is not one of',
      ],
      [
        { target: { case: 'listId', value: 1 } },
        'payload.target.value is number 1, but the field is a string',
      ],
      [{ score: 'NaN' }, 'payload.score is the string "NaN", but the field is a double'],
    ];
    for (const [change, message] of cases) {
      expect(encodeError({ ...email(), ...change }).message).toContain(`cannot encode job job-1: ${message}`);
    }
  });

  it('refuses strings with a lone surrogate, in fields, map keys and the envelope', () => {
    expect(encodeError(email({ subject: 'a\ud800' })).message).toBe(
      'cannot encode job job-1: payload.subject is a string with a lone UTF-16 surrogate (\\ud800 at index 1), which protobuf strings (UTF-8) cannot carry; fix the text, or use a bytes field',
    );
    expect(encodeError(email({ headers: { '\udc00': 'v' } })).message).toContain('is a map key with a lone');
    expect(encodeError(email(), { traceparent: '\ud800' }).message).toContain(
      'envelope.traceparent is a string with a lone UTF-16 surrogate',
    );
  });

  it('refuses messages nested deeper than protobuf-es reads', () => {
    expect(encodeError(email({ cc: [chain(PROTOBUF_MAX_DEPTH)] })).message).toContain(
      `is nested ${PROTOBUF_MAX_DEPTH + 1} messages deep; protobuf-es reads at most ${PROTOBUF_MAX_DEPTH}`,
    );
  });

  it('refuses envelope fields protobuf cannot hold, and the shared envelope checks', () => {
    expect(encodeError(email(), { createdAt: 1.5 }).message).toBe(
      'cannot encode job job-1: envelope.createdAt must be a whole number of epoch ms within ±(2^53 - 1), got number 1.5',
    );
    expect(encodeError(email(), { version: 2 ** 32 }).message).toContain(
      'envelope.version must fit a uint32',
    );
    expect(encodeError(email(), { v: 2 }).message).toBe(
      'cannot encode job: envelope.v is 2 but the protobuf codec writes format 1; set v to ENVELOPE_FORMAT',
    );
  });
});

describe('protobufCodec decode rejects malformed bytes', () => {
  const cases: [string, Buffer, string][] = [
    [
      'an unknown field',
      bytesOf((w) =>
        valid(w).tag(7, WireType.Varint).uint32(1).tag(6, WireType.LengthDelimited).bytes(PAYLOAD),
      ),
      'the envelope has the unknown field number 7 (at byte 11); it was written by a newer or different codec',
    ],
    [
      'a field with the wrong wire type',
      bytesOf((w) => w.tag(1, WireType.LengthDelimited).string('1')),
      'field 1 (v) has wire type 2, expected 0 (at byte 0)',
    ],
    [
      'a field given twice',
      bytesOf((w) => valid(w).tag(1, WireType.Varint).uint32(1)),
      'field 1 (v) occurs twice (at byte 11)',
    ],
    ['a missing payload', bytesOf(valid), 'cannot decode job job-1: the envelope has no payload field'],
    [
      'a missing v',
      bytesOf((w) => w.tag(6, WireType.LengthDelimited).bytes(PAYLOAD)),
      'envelope format 0 is not supported (this delayq reads format 1)',
    ],
    [
      'v beyond uint32',
      bytesOf((w) => w.tag(1, WireType.Varint).uint64(2n ** 32n + 1n)),
      'field 1 (v) is 4294967297, beyond the uint32 range',
    ],
    [
      'a version of 0',
      bytesOf((w) => w.tag(1, WireType.Varint).uint32(1).tag(6, WireType.LengthDelimited).bytes(PAYLOAD)),
      'envelope.version must be an integer >= 1, got number 0',
    ],
    [
      'created_at beyond 2^53',
      bytesOf((w) =>
        valid(w)
          .tag(4, WireType.Varint)
          .int64(2n ** 53n),
      ),
      'field 4 (created_at) is 9007199254740992, beyond ±(2^53 - 1) ms',
    ],
    [
      'an id that is not UTF-8',
      bytesOf((w) => w.tag(2, WireType.LengthDelimited).bytes(new Uint8Array([0xc3, 0x28]))),
      'field 2 (id) is not valid UTF-8',
    ],
    ['truncated bytes', codec.envelope.encode(envelope(email({ to: 'x' }))).subarray(0, -1), 'premature EOF'],
    ['JSON text', Buffer.from('{"v":1}'), 'has the unknown field number 15'],
    [
      'a payload that is not a message of the schema',
      bytesOf((w) =>
        valid(w)
          .tag(6, WireType.LengthDelimited)
          .bytes(new Uint8Array([0x0a, 0x05, 0x61])),
      ),
      'cannot decode job job-1: payload is not a valid delayq.test.v1.Email message (premature EOF); was it written with another schema?',
    ],
    [
      'a payload with invalid UTF-8 in a string field',
      bytesOf((w) =>
        valid(w)
          .tag(6, WireType.LengthDelimited)
          .bytes(new Uint8Array([0x0a, 0x01, 0xff])),
      ),
      'payload is not a valid delayq.test.v1.Email message',
    ],
  ];
  for (const [name, bytes, message] of cases) {
    it(`refuses ${name}`, () => {
      expect(decodeError(bytes).message).toContain(message);
    });
  }

  it('refuses empty input, which has no payload', () => {
    expect(decodeError(Buffer.alloc(0)).message).toBe(
      'cannot decode job: envelope format 0 is not supported (this delayq reads format 1); upgrade this worker if a newer delayq wrote it',
    );
  });

  it('refuses input that is not bytes', () => {
    expect(decodeError([1] as unknown as Buffer).message).toBe(
      'cannot decode job: expected a Buffer, got an array',
    );
  });
});

describe('protobufCodec decode never pollutes prototypes', () => {
  it('keeps "__proto__" and "constructor" map keys as own data', () => {
    const entry = (key: string, value: string): Uint8Array =>
      bytesOf((w) =>
        w.tag(1, WireType.LengthDelimited).string(key).tag(2, WireType.LengthDelimited).string(value),
      );
    const payload = bytesOf((w) =>
      w
        .tag(9, WireType.LengthDelimited)
        .bytes(entry('__proto__', 'x'))
        .tag(9, WireType.LengthDelimited)
        .bytes(entry('constructor', 'y')),
    );
    const decoded = codec.envelope.decode(
      bytesOf((w) => valid(w).tag(6, WireType.LengthDelimited).bytes(payload)),
    ).payload as Email;
    expect(Object.keys(decoded.headers)).toStrictEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(decoded.headers)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('keeps a "__proto__" key of a message-valued map as own data', () => {
    const recipient = toBinary(RecipientSchema, create(RecipientSchema, { address: 'polluted' }));
    const entry = bytesOf((w) =>
      w
        .tag(1, WireType.LengthDelimited)
        .string('__proto__')
        .tag(2, WireType.LengthDelimited)
        .bytes(recipient),
    );
    const payload = bytesOf((w) => w.tag(16, WireType.LengthDelimited).bytes(entry));
    const decoded = codec.envelope.decode(
      bytesOf((w) => valid(w).tag(6, WireType.LengthDelimited).bytes(payload)),
    ).payload as Email;
    expect(Object.getOwnPropertyDescriptor(decoded.aliases, '__proto__')?.value).toMatchObject({
      address: 'polluted',
    });
    expect(Object.getPrototypeOf(decoded.aliases)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).address).toBeUndefined();
  });
});

describe('PROTOBUF_ENVELOPE_FIELDS', () => {
  it('matches the field numbers of envelope.proto', () => {
    const numbers = Object.fromEntries(EnvelopeSchema.fields.map((f) => [f.localName, f.number]));
    expect(numbers).toStrictEqual(PROTOBUF_ENVELOPE_FIELDS);
  });
});
