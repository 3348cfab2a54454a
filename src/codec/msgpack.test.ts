import { Packr, Unpackr, pack, unpack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { DecodeError, EncodeError } from '../errors.js';
import { ENVELOPE_FORMAT, type Envelope } from './codec.js';
import {
  MSGPACK_EXT,
  MSGPACK_MAX_DEPTH,
  bigintFromBytes,
  bigintToBytes,
  msgpackCodec,
  msgpackEnvelopeCodec,
} from './msgpack.js';

function envelope(payload: unknown, extra: Partial<Envelope> = {}): Envelope {
  return { v: ENVELOPE_FORMAT, id: 'job-1', version: 1, createdAt: 5, payload, ...extra };
}

function roundTrip<T>(payload: T): T {
  return msgpackCodec.decodePayload(msgpackCodec.encodePayload(payload)) as T;
}

/** A short MessagePack str, as hex. */
function str(s: string): string {
  const bytes = Buffer.from(s);
  if (bytes.length > 31) throw new Error('test helper: fixstr only');
  return (0xa0 + bytes.length).toString(16) + bytes.toString('hex');
}

/** Envelope bytes { v: 1, id: "job-1", version: 1, createdAt: 5, payload: <hex> }. */
function withPayload(payloadHex: string): Buffer {
  return Buffer.from(
    `85${str('v')}01${str('id')}${str('job-1')}${str('version')}01${str('createdAt')}05${str('payload')}${payloadHex}`,
    'hex',
  );
}

function encodeError(payload: unknown, extra: Partial<Envelope> = {}): EncodeError {
  try {
    msgpackEnvelopeCodec.encode(envelope(payload, extra));
  } catch (e) {
    expect(e).toBeInstanceOf(EncodeError);
    return e as EncodeError;
  }
  throw new Error('encode did not throw');
}

function decodeError(bytes: Buffer): DecodeError {
  try {
    msgpackEnvelopeCodec.decode(bytes);
  } catch (e) {
    expect(e).toBeInstanceOf(DecodeError);
    return e as DecodeError;
  }
  throw new Error('decode did not throw');
}

afterEach(() => {
  // A failed pollution test must not leak into the next one.
  delete (Object.prototype as Record<string, unknown>).polluted;
});

describe('msgpackCodec envelope', () => {
  it('is named msgpack', () => {
    expect(msgpackCodec.name).toBe('msgpack');
  });

  it('round-trips every envelope field, with and without traceparent', () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const withTrace = envelope(
      { a: 1 },
      { traceparent: tp, version: 3, id: 'x:y', createdAt: 1767225600000 },
    );
    expect(msgpackEnvelopeCodec.decode(msgpackEnvelopeCodec.encode(withTrace))).toStrictEqual(withTrace);
    const decoded = msgpackEnvelopeCodec.decode(msgpackEnvelopeCodec.encode(envelope({ a: 1 })));
    expect(decoded).toStrictEqual(envelope({ a: 1 }));
    expect('traceparent' in decoded).toBe(false);
  });

  it('writes the documented wire format', () => {
    const bytes = msgpackEnvelopeCodec.encode(
      envelope({
        d: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)),
        n: -129n,
        m: new Map([[1, 'a']]),
        s: new Set(['x']),
        u8: new Uint8Array([0, 1, 2]),
        buf: Buffer.from([255]),
        u: undefined,
        z: -0,
      }),
    );
    expect(bytes.toString('hex')).toBe(
      withPayload(
        '88' +
          `${str('d')}d7ff016e3600695735a5` + // timestamp 64: 6 ms as ns << 2, then seconds
          `${str('n')}d550ff7f` + // ext 80, two's complement of -129
          `${str('m')}93d4510001${str('a')}` + // [Map marker, 1, "a"]
          `${str('s')}92d45200${str('x')}` + // [Set marker, "x"]
          `${str('u8')}c403000102` + // bin 8
          `${str('buf')}d453ff` + // ext 83
          `${str('u')}d40000` + // undefined: fixext 1, type 0
          `${str('z')}d45400`, // ext 84: -0
      ).toString('hex'),
    );
  });

  it('writes plain payloads as plain MessagePack that any reader understands', () => {
    const payload = { to: 'a@b.c', n: [1, -1, 2 ** 40, 0.5], ok: true, none: null, nested: { deep: [] } };
    const bytes = msgpackEnvelopeCodec.encode(envelope(payload));
    expect(unpack(bytes)).toStrictEqual(envelope(payload));
  });

  it('reads float 64 -0.0 and int 64 within the safe range written by other encoders', () => {
    expect(Object.is(msgpackEnvelopeCodec.decode(withPayload('cb8000000000000000')).payload, -0)).toBe(true);
    expect(msgpackEnvelopeCodec.decode(withPayload('d3ffe0000000000001')).payload).toBe(-(2 ** 53) + 1);
    expect(msgpackEnvelopeCodec.decode(withPayload('cf001fffffffffffff')).payload).toBe(2 ** 53 - 1);
    expect(msgpackEnvelopeCodec.decode(withPayload('ca3fc00000')).payload).toBe(1.5);
  });

  it('accepts a Uint8Array that is not a Buffer and does not touch the input', () => {
    const bytes = msgpackEnvelopeCodec.encode(envelope({ a: 1 }));
    const view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    expect(msgpackEnvelopeCodec.decode(view as Buffer).payload).toStrictEqual({ a: 1 });
    expect(Object.keys(bytes)).toStrictEqual(Object.keys(Buffer.from(bytes)));
  });
});

describe('msgpackCodec round trips', () => {
  it('keeps plain data as plain objects and arrays with Object.prototype', () => {
    const decoded = roundTrip({ a: [1, 'two', { three: null }], b: true, '': 'empty key', 'x y': 2 });
    expect(decoded).toStrictEqual({ a: [1, 'two', { three: null }], b: true, '': 'empty key', 'x y': 2 });
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
  });

  it('keeps key order', () => {
    expect(Object.keys(roundTrip({ z: 1, a: 2, m: 3 }))).toStrictEqual(['z', 'a', 'm']);
  });

  it('round-trips Dates, including before 1970 and years outside 0..9999', () => {
    const dates = [
      new Date(0),
      new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)),
      new Date(-1500),
      new Date('+275760-09-13T00:00:00.000Z'),
      new Date('-271821-04-20T00:00:00.000Z'),
      new Date(Date.UTC(2106, 1, 7, 6, 28, 16)), // just beyond timestamp 32
    ];
    expect(roundTrip(dates)).toStrictEqual(dates);
  });

  it('round-trips BigInts of any size, and keeps numbers numbers', () => {
    const values = [0n, 1n, -1n, 127n, 128n, -128n, -129n, 2n ** 64n, -(2n ** 200n) + 3n, 2n ** 53n];
    expect(roundTrip(values)).toStrictEqual(values);
    const numbers = [0, 1, -1, 2 ** 31, 2 ** 32, 2 ** 53 - 1, -(2 ** 53) + 1, 1e300];
    expect(roundTrip(numbers)).toStrictEqual(numbers);
  });

  it('writes BigInts as minimal two complement and reads any length', () => {
    expect(bigintToBytes(0n).toString('hex')).toBe('00');
    expect(bigintToBytes(127n).toString('hex')).toBe('7f');
    expect(bigintToBytes(128n).toString('hex')).toBe('0080');
    expect(bigintToBytes(-128n).toString('hex')).toBe('80');
    expect(bigintToBytes(-129n).toString('hex')).toBe('ff7f');
    expect(bigintFromBytes(Buffer.from('ffff7f', 'hex'))).toBe(-129n);
    expect(bigintFromBytes(Buffer.from('000080', 'hex'))).toBe(128n);
  });

  it('round-trips Maps with keys of any type, in insertion order', () => {
    const map = new Map<unknown, unknown>([
      ['b', 1],
      [1, 'one'],
      [null, undefined],
      [2n, new Date(7)],
      [{ k: 'obj' }, ['v']],
      [new Map([[1, 2]]), new Set([3])],
    ]);
    const decoded = roundTrip(map);
    expect(decoded).toStrictEqual(map);
    expect([...decoded.keys()].slice(0, 4)).toStrictEqual(['b', 1, null, 2n]);
  });

  it('round-trips Sets, nested in arrays and Maps, and empty ones', () => {
    const value = [new Set([1, 'a', new Set()]), new Map(), new Set(), new Map([['s', new Set([null])]])];
    expect(roundTrip(value)).toStrictEqual(value);
  });

  it('round-trips Uint8Array as Uint8Array and Buffer as Buffer, copied out of the stored bytes', () => {
    const decoded = roundTrip({ u: new Uint8Array([1, 2]), b: Buffer.from([3]), e: new Uint8Array(0) });
    expect(decoded.u).toStrictEqual(new Uint8Array([1, 2]));
    expect(Object.getPrototypeOf(decoded.u)).toBe(Uint8Array.prototype);
    expect(decoded.u.byteOffset).toBe(0);
    expect(decoded.u.buffer.byteLength).toBe(2);
    expect(Buffer.isBuffer(decoded.b)).toBe(true);
    expect([...decoded.b]).toStrictEqual([3]);
    expect(decoded.e).toStrictEqual(new Uint8Array(0));
  });

  it('keeps undefined object fields as present keys, and undefined array items and holes', () => {
    const decoded = roundTrip({ a: undefined, list: [undefined, 1] });
    expect(Object.keys(decoded)).toStrictEqual(['a', 'list']);
    expect(decoded).toStrictEqual({ a: undefined, list: [undefined, 1] });
    // eslint-disable-next-line no-sparse-arrays
    expect(roundTrip([1, , 3])).toStrictEqual([1, undefined, 3]);
  });

  it('round-trips a payload that is itself undefined, a Date, bytes or a primitive', () => {
    for (const payload of [undefined, null, 0, 'text', true, new Date(9), 5n, new Uint8Array([1])]) {
      expect(roundTrip(payload)).toStrictEqual(payload);
    }
  });

  it('round-trips NaN, Infinity, -Infinity and -0 without turning -0 into 0', () => {
    const decoded = roundTrip([NaN, Infinity, -Infinity, -0, 0]);
    expect(decoded).toStrictEqual([NaN, Infinity, -Infinity, -0, 0]);
    expect(Object.is(decoded[3], -0)).toBe(true);
    expect(Object.is(decoded[4], 0)).toBe(true);
  });

  it('round-trips unicode in keys and values', () => {
    const value = { 'ключ 🔑': 'значение 😀', '\u0000': 'nul', e: 'e\u0301' };
    expect(roundTrip(value)).toStrictEqual(value);
  });

  it('keeps keys that look special as plain data', () => {
    const value = { '~t': 'Date', v: 'x', constructor: 'c', prototype: { polluted: true }, toJSON: 1 };
    expect(roundTrip(value)).toStrictEqual(value);
  });

  it('duplicates shared (non-cyclic) references instead of refusing them', () => {
    const shared = { x: 1 };
    const decoded = roundTrip({ a: shared, b: shared });
    expect(decoded).toStrictEqual({ a: { x: 1 }, b: { x: 1 } });
    expect(decoded.a).not.toBe(decoded.b);
  });

  it('brings null-prototype objects back as plain objects', () => {
    const o = Object.assign(Object.create(null) as Record<string, unknown>, { toJSON: 1, a: 2 });
    expect(roundTrip(o)).toStrictEqual({ toJSON: 1, a: 2 });
  });

  it('does not modify the payload it encodes', () => {
    const payload = { m: new Map([[1n, -0]]), list: [new Set([Buffer.from([1])])] };
    msgpackEnvelopeCodec.encode(envelope(payload));
    expect(payload).toStrictEqual({ m: new Map([[1n, -0]]), list: [new Set([Buffer.from([1])])] });
  });

  it('nests up to MSGPACK_MAX_DEPTH containers', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < MSGPACK_MAX_DEPTH; i++) deep = i % 2 === 0 ? [deep] : { k: deep };
    expect(roundTrip(deep)).toStrictEqual(deep);
  });

  it('leaves other msgpackr users in the process unaffected by its extensions', () => {
    msgpackEnvelopeCodec.encode(envelope({ m: new Map([[1, 2]]), n: 1n }));
    expect(unpack(pack(new Map([[1, 2]])))).toStrictEqual({ 1: 2 });
    expect(unpack(new Packr({ useRecords: false }).pack([1n, Buffer.from([1])]))).toStrictEqual([
      1n,
      Buffer.from([1]),
    ]);
  });
});

describe('msgpackCodec encode refusals', () => {
  it('refuses functions with the path and what to do', () => {
    expect(encodeError({ a: { fn() {} } }).message).toBe(
      'cannot encode job job-1: payload.a.fn is a function (fn); functions cannot be stored in a job, so pass data instead (for example the name of the function for the handler to look up)',
    );
  });

  it('refuses symbols as values and as keys', () => {
    expect(encodeError([1, Symbol('s')]).message).toContain('payload[1] is a symbol (Symbol(s))');
    expect(encodeError({ a: { [Symbol('k')]: 1 } }).message).toContain(
      'payload.a has a symbol-keyed property (Symbol(k))',
    );
  });

  it('refuses cycles, naming both ends', () => {
    const a: Record<string, unknown> = { list: [] };
    (a.list as unknown[]).push({ back: a });
    expect(encodeError(a).message).toBe(
      'cannot encode job job-1: payload.list[0].back refers back to payload, which contains it (a cycle); MessagePack cannot represent cycles, so break it, for example by storing an id instead of the back-reference',
    );
    const m = new Map<string, unknown>();
    m.set('self', m);
    expect(encodeError({ m }).message).toContain('payload.m.get("self") refers back to payload.m');
  });

  it('refuses class instances and unsupported built-ins, naming the class', () => {
    class Point {
      x = 1;
    }
    for (const [value, name] of [
      [new Point(), 'Point'],
      [new Int16Array(2), 'Int16Array'],
      [/re/, 'RegExp'],
      [new Error('e'), 'Error'],
      [new ArrayBuffer(1), 'ArrayBuffer'],
      [new (class extends Map {})(), 'a class'],
    ] as const) {
      expect(encodeError({ v: value }).message).toContain(`payload.v is an instance of ${name}`);
    }
  });

  it('refuses Invalid Date', () => {
    expect(encodeError({ d: new Date(NaN) }).message).toContain('payload.d is an Invalid Date');
  });

  it('refuses own __proto__ keys and says to rename them', () => {
    const o = JSON.parse('{"__proto__":{"polluted":1}}') as unknown;
    expect(encodeError({ o }).message).toBe(
      'cannot encode job job-1: payload.o.__proto__ is an own property named "__proto__", which cannot be decoded safely; rename the key',
    );
  });

  it('refuses strings and keys with a lone surrogate, which UTF-8 cannot carry', () => {
    expect(encodeError({ s: 'a\ud800b' }).message).toBe(
      'cannot encode job job-1: payload.s is a string with a lone UTF-16 surrogate (\\ud800 at index 1), which MessagePack strings (UTF-8) cannot carry; fix the text, or store it as bytes',
    );
    expect(encodeError({ ['k\udc00']: 1 }).message).toContain('has a key with a lone UTF-16 surrogate');
    expect(encodeError(new Set(['\udbff'])).message).toContain('payload[set item #0] is a string with');
    expect(encodeError(1, { id: 'bad\ud800' }).message).toContain('envelope.id is a string with');
  });

  it('refuses nesting deeper than MSGPACK_MAX_DEPTH', () => {
    let deep: unknown = [];
    for (let i = 0; i < MSGPACK_MAX_DEPTH; i++) deep = [deep];
    expect(encodeError(deep).message).toContain(`is nested more than ${MSGPACK_MAX_DEPTH} containers deep`);
  });

  it('reports a throwing getter as an EncodeError with the cause', () => {
    const boom = new Error('boom');
    const e = encodeError({
      get g(): number {
        throw boom;
      },
    });
    expect(e.message).toBe('cannot encode job job-1: payload.g could not be read: boom');
    expect(e.cause).toBe(boom);
  });

  it('refuses envelopes it could not decode again, with the json wording', () => {
    expect(encodeError(1, { v: 2 }).message).toBe(
      'cannot encode job: envelope.v is 2 but the msgpack codec writes format 1; set v to ENVELOPE_FORMAT',
    );
    expect(encodeError(1, { version: 0 }).message).toContain('envelope.version must be an integer >= 1');
    expect(encodeError(1, { createdAt: NaN }).message).toContain(
      'envelope.createdAt must be a whole number of epoch ms',
    );
  });
});

describe('msgpackCodec decode rejects malformed bytes', () => {
  const cases: [string, Buffer, string][] = [
    ['empty input', Buffer.alloc(0), 'the envelope is not a MessagePack map: the bytes start with nothing'],
    [
      'JSON text',
      Buffer.from('{"v":1}'),
      'the envelope is not a MessagePack map: the bytes start with an integer',
    ],
    ['a truncated envelope', withPayload('a3616263').subarray(0, -2), 'payload is cut short'],
    ['trailing bytes', Buffer.concat([withPayload('01'), Buffer.from([0])]), 'is followed by 1 more bytes'],
    ['the never-used byte 0xc1', withPayload('c1'), 'payload is the byte 0xc1, which MessagePack never uses'],
    ['invalid UTF-8 in a string', withPayload('a2c328'), 'payload is a string that is not valid UTF-8'],
    ['invalid UTF-8 in a key', withPayload('81a1ff01'), 'payload is a string that is not valid UTF-8'],
    ['a non-string map key', withPayload('810102'), 'payload has a map key that is an integer'],
    ['int 64 beyond 2^53', withPayload('cf0020000000000000'), 'payload is the integer 9007199254740992'],
    [
      'a negative int 64 beyond -2^53',
      withPayload('d3ffe0000000000000'),
      'payload is the integer -9007199254740992',
    ],
    ['a Map marker not leading an array', withPayload('92c0d45100'), 'payload[1] is a Map marker (ext 81)'],
    ['a Set marker outside an array', withPayload('d45200'), 'payload is a Set marker (ext 82)'],
    ['a Map with a dangling key', withPayload('92d4510001'), 'odd number of items after the marker'],
    ['a duplicate Map key', withPayload('95d4510001c001c3'), 'payload[map key #1] repeats an earlier key'],
    ['a duplicate Set item', withPayload('93d45200a178a178'), 'payload[set item #1] repeats an earlier item'],
    ['an empty BigInt', withPayload('c70050'), 'is a BigInt (ext 80) without any bytes'],
    [
      'an undefined with data',
      withPayload('d40001'),
      'is an undefined (ext 0) whose data is not the one byte 0x00',
    ],
    ['a timestamp of 5 bytes', withPayload('c705ff0000000000'), 'is a timestamp of 5 bytes'],
    ['a timestamp with 1e9 ns', withPayload('d7ffee6b280000000000'), 'nanoseconds are 1e9 or more'],
    [
      'a timestamp beyond the Date range',
      withPayload('c70cff00000000000007ffffffffffff'),
      'outside the range a Date can hold',
    ],
    ['a bin longer than the input', withPayload('c4ff00'), 'payload is cut short'],
    ['an array longer than the input', withPayload('dd7fffffff'), 'is cut short'],
    ['msgpackr record definitions', withPayload('d47240' + `91${str('x')}01`), 'extension of type 114'],
    ['msgpackr structured clone ids', withPayload('d66900000001' + '90'), 'extension of type 105'],
    ['msgpackr Error', withPayload('d46500' + `93${str('Error')}${str('m')}c0`), 'extension of type 101'],
    ['msgpackr RegExp', withPayload('d47800' + `92${str('a+')}${str('g')}`), 'extension of type 120'],
    ['msgpackr typed arrays', withPayload('c70374010203'), 'extension of type 116'],
    ['msgpackr bundled strings', withPayload('d66200000000'), 'extension of type 98'],
    ['msgpackr BigInt', withPayload('d44201'), 'extension of type 66'],
    ['msgpackr Set', withPayload('d47300' + '90'), 'extension of type 115'],
    [
      'a top-level array',
      Buffer.from('9101', 'hex'),
      'the envelope is not a MessagePack map: the bytes start with an array',
    ],
  ];
  for (const [name, bytes, message] of cases) {
    it(`refuses ${name}`, () => {
      expect(decodeError(bytes).message).toContain(message);
    });
  }

  it('names the path and byte offset of a problem deep in the payload', () => {
    expect(decodeError(withPayload(`81${str('a b')}92c0c1`)).message).toBe(
      'cannot decode job: payload["a b"][1] is the byte 0xc1, which MessagePack never uses (at byte 48)',
    );
  });

  it('refuses nesting deeper than MSGPACK_MAX_DEPTH without overflowing the stack', () => {
    expect(decodeError(withPayload('91'.repeat(100_000) + 'c0')).message).toContain(
      `is nested more than ${MSGPACK_MAX_DEPTH} containers deep`,
    );
  });

  it('validates the envelope exactly like the json codec', () => {
    const write = (o: object): Buffer => new Packr({ useRecords: false, variableMapSize: true }).pack(o);
    const base = { v: 1, id: 'job-1', version: 1, createdAt: 5, payload: 1 };
    expect(decodeError(write({ ...base, v: 2 })).message).toBe(
      'cannot decode job: envelope format 2 is not supported (this delayq reads format 1); upgrade this worker if a newer delayq wrote it',
    );
    expect(decodeError(write({ ...base, extra: 1 })).message).toContain('unknown field "extra"');
    expect(decodeError(write({ v: 1, id: 'job-1', version: 1, createdAt: 5 })).message).toBe(
      'cannot decode job job-1: the envelope has no payload field',
    );
    expect(decodeError(write({ ...base, id: 7 })).message).toBe(
      'cannot decode job: envelope.id must be a string, got number 7',
    );
    expect(decodeError(write({ ...base, version: 1.5 })).message).toContain('envelope.version must be');
  });

  it('refuses input that is not bytes', () => {
    expect(decodeError('text' as unknown as Buffer).message).toBe(
      'cannot decode job: expected a Buffer, got the string "text"',
    );
  });
});

describe('msgpackCodec decode never pollutes prototypes', () => {
  it('refuses a "__proto__" key in the envelope and anywhere in the payload', () => {
    const polluter = `81${str('__proto__')}81${str('polluted')}c3`;
    expect(decodeError(Buffer.from(`81${str('__proto__')}81${str('polluted')}c3`, 'hex')).message).toContain(
      'cannot decode job: the envelope has a "__proto__" key',
    );
    expect(decodeError(withPayload(`91${polluter}`)).message).toContain(
      'payload[0] has a "__proto__" key, which the encoder never writes',
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('keeps constructor.prototype as plain data', () => {
    const decoded = msgpackEnvelopeCodec.decode(
      withPayload(`81${str('constructor')}81${str('prototype')}81${str('polluted')}c3`),
    ).payload as { constructor: { prototype: { polluted: boolean } } };
    expect(decoded.constructor.prototype.polluted).toBe(true);
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('MSGPACK_EXT', () => {
  it('lists the extension types the header documents', () => {
    expect(MSGPACK_EXT).toStrictEqual({ bigint: 80, map: 81, set: 82, buffer: 83, negativeZero: 84 });
  });
});

describe('msgpackr’s process-wide extension registry', () => {
  it('is left alone: another msgpackr user still finds delayq’s types 80..84 unknown', () => {
    const env: Envelope = {
      v: 1,
      id: 'j',
      version: 1,
      createdAt: 0,
      payload: [1n, new Map([[1, 2]]), new Set([1]), Buffer.from([1]), -0],
    };
    expect(msgpackEnvelopeCodec.decode(msgpackEnvelopeCodec.encode(env))).toStrictEqual(env);
    for (const type of Object.values(MSGPACK_EXT)) {
      const bytes = Buffer.from([0xd4, type, 0]);
      expect(() => void new Unpackr().unpack(bytes)).toThrow(`Unknown extension ${type}`);
    }
  });
});

describe('duplicate map keys', () => {
  it('are refused, never last-wins', () => {
    // fixmap of 2: "a" -> 1, "a" -> 2
    const bytes = Buffer.from('82a16101a16102', 'hex');
    expect(() => msgpackCodec.decodePayload(bytes)).toThrow(DecodeError);
    expect(() => msgpackCodec.decodePayload(bytes)).toThrow(/repeats the key "a"/);
    // Equal keys in different maps are fine.
    expect(msgpackCodec.decodePayload(Buffer.from('9281a1610181a16102', 'hex'))).toEqual([
      { a: 1 },
      { a: 2 },
    ]);
  });
});
