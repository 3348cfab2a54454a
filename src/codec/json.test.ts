import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DecodeError, EncodeError } from '../errors.js';
import { ENVELOPE_FORMAT, type Envelope } from './codec.js';
import { fromTagged } from './json-decode.js';
import { toTagged } from './json-encode.js';
import { jsonEnvelopeCodec } from './json-envelope.js';
import { escapeKey, unescapeKey } from './json-tags.js';
import { jsonCodec } from './json.js';

function envelope(payload: unknown, extra: Partial<Envelope> = {}): Envelope {
  return { v: ENVELOPE_FORMAT, id: 'job-1', version: 1, createdAt: 1767225600000, payload, ...extra };
}

function roundTrip<T>(payload: T): T {
  return jsonCodec.decodePayload(jsonCodec.encodePayload(payload)) as T;
}

/** Bytes of an envelope whose payload is the given raw JSON text. */
function withPayload(payloadJson: string): Buffer {
  return Buffer.from(`{"v":1,"id":"job-1","version":1,"createdAt":5,"payload":${payloadJson}}`);
}

function encodeError(payload: unknown): EncodeError {
  try {
    jsonEnvelopeCodec.encode(envelope(payload));
  } catch (e) {
    expect(e).toBeInstanceOf(EncodeError);
    return e as EncodeError;
  }
  throw new Error('encode did not throw');
}

function decodeError(bytes: Buffer | string): DecodeError {
  try {
    jsonEnvelopeCodec.decode(typeof bytes === 'string' ? Buffer.from(bytes) : bytes);
  } catch (e) {
    expect(e).toBeInstanceOf(DecodeError);
    return e as DecodeError;
  }
  throw new Error('decode did not throw');
}

function polluted(): unknown {
  return ({} as Record<string, unknown>).polluted;
}

afterEach(() => {
  // A failed pollution test must not leak into the next one.
  delete (Object.prototype as Record<string, unknown>).polluted;
});

describe('jsonCodec envelope', () => {
  it('is named json', () => {
    expect(jsonCodec.name).toBe('json');
  });

  it('round-trips every envelope field, with and without traceparent', () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const withTrace = envelope({ a: 1 }, { traceparent: tp, version: 3, id: 'x:y' });
    expect(jsonEnvelopeCodec.decode(jsonEnvelopeCodec.encode(withTrace))).toEqual(withTrace);
    const decoded = jsonEnvelopeCodec.decode(jsonEnvelopeCodec.encode(envelope({ a: 1 })));
    expect(decoded).toEqual(envelope({ a: 1 }));
    expect('traceparent' in decoded).toBe(false);
  });

  it('writes the documented wire format', () => {
    const bytes = jsonEnvelopeCodec.encode(
      envelope(
        {
          d: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)),
          n: 12345678901234567890n,
          m: new Map([[1, 'a']]),
          s: new Set(['x']),
          u8: new Uint8Array([0, 1, 2]),
          buf: Buffer.from([255]),
          u: undefined,
          nums: [NaN, Infinity, -Infinity, -0, 0],
          '~t': 'user',
          plain: 'text',
        },
        { traceparent: 'tp' },
      ),
    );
    expect(bytes.toString('utf8')).toBe(
      '{"v":1,"id":"job-1","version":1,"createdAt":1767225600000,"traceparent":"tp","payload":{' +
        '"d":{"~t":"Date","v":"2026-01-02T03:04:05.006Z"},' +
        '"n":{"~t":"BigInt","v":"12345678901234567890"},' +
        '"m":{"~t":"Map","v":[[1,"a"]]},' +
        '"s":{"~t":"Set","v":["x"]},' +
        '"u8":{"~t":"Uint8Array","v":"AAEC"},' +
        '"buf":{"~t":"Buffer","v":"/w=="},' +
        '"u":{"~t":"undefined"},' +
        '"nums":[{"~t":"number","v":"NaN"},{"~t":"number","v":"Infinity"},{"~t":"number","v":"-Infinity"},{"~t":"number","v":"-0"},0],' +
        '"~~t":"user",' +
        '"plain":"text"}}',
    );
  });

  it('writes plain payloads exactly as JSON.stringify would', () => {
    const payload = { a: [1, 'two', { three: null, four: true }], b: 1.5, 'c d': '\u2028é' };
    const text = jsonEnvelopeCodec.encode(envelope(payload)).toString('utf8');
    expect(JSON.parse(text)).toEqual({ ...envelope(payload), payload });
    expect(text).toContain(JSON.stringify(payload));
  });

  it('accepts a Uint8Array that is not a Buffer', () => {
    const bytes = jsonEnvelopeCodec.encode(envelope({ a: 1 }));
    expect(jsonEnvelopeCodec.decode(new Uint8Array(bytes) as Buffer).payload).toEqual({ a: 1 });
  });
});

describe('jsonCodec round trips', () => {
  it('keeps plain data as plain objects and arrays with Object.prototype', () => {
    const payload = { s: 'x', n: 1.25, t: true, f: false, z: null, arr: [1, [2, [3]]], o: { p: { q: 'r' } } };
    const back = roundTrip(payload);
    expect(back).toEqual(payload);
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(back.o.p)).toBe(Object.prototype);
    expect(Array.isArray(back.arr)).toBe(true);
  });

  it('keeps key order', () => {
    expect(Object.keys(roundTrip({ z: 1, a: 2, '~m': 3, b: undefined }))).toEqual(['z', 'a', '~m', 'b']);
  });

  it('round-trips Dates, including years outside 0..9999', () => {
    const dates = [
      new Date(0),
      new Date(Date.UTC(2026, 4, 1, 12, 0, 0, 999)),
      new Date(8.64e15),
      new Date(-8.64e15),
    ];
    const back = roundTrip({ dates, one: dates[1] });
    expect(back.dates).toEqual(dates);
    for (const d of back.dates) expect(d).toBeInstanceOf(Date);
    expect(back.one?.getTime()).toBe(dates[1]?.getTime());
  });

  it('round-trips BigInts', () => {
    const values = [0n, 1n, -1n, 2n ** 200n, -(3n ** 100n)];
    const back = roundTrip(values);
    expect(back).toEqual(values);
    for (const v of back) expect(typeof v).toBe('bigint');
  });

  it('round-trips Maps with keys of any type, in insertion order', () => {
    const objKey = { k: 1 };
    const map = new Map<unknown, unknown>([
      ['s', 1],
      [2, 'two'],
      [objKey, { deep: new Date(5) }],
      [new Date(7), 3n],
      [undefined, null],
      [NaN, -0],
      [new Map([[1, 2]]), new Set([1])],
    ]);
    const back = roundTrip({ map }).map;
    expect(back).toBeInstanceOf(Map);
    expect(
      [...back.keys()].map((k) => (typeof k === 'object' && k !== null ? k.constructor.name : k)),
    ).toEqual(['s', 2, 'Object', 'Date', undefined, NaN, 'Map']);
    const entries = [...back.entries()];
    expect(entries[2]).toEqual([{ k: 1 }, { deep: new Date(5) }]);
    expect(entries[3]).toEqual([new Date(7), 3n]);
    expect(back.has(undefined)).toBe(true);
    expect(Object.is(back.get(NaN), -0)).toBe(true);
    expect(entries[6]).toEqual([new Map([[1, 2]]), new Set([1])]);
  });

  it('round-trips Sets, nested in arrays and Maps', () => {
    const payload = [
      new Set([1, 'a', undefined, new Set([2]), { x: [new Date(1)] }]),
      new Map([['s', new Set([3n])]]),
    ];
    const back = roundTrip(payload);
    expect(back).toEqual(payload);
    expect(back[0]).toBeInstanceOf(Set);
    expect([...(back[0] as Set<unknown>)][2]).toBeUndefined();
    expect((back[1] as Map<string, Set<bigint>>).get('s')?.has(3n)).toBe(true);
  });

  it('round-trips Uint8Array as Uint8Array and Buffer as Buffer', () => {
    const backing = new Uint8Array([9, 9, 1, 2, 3, 9]);
    const view = backing.subarray(2, 5);
    const back = roundTrip({
      view,
      empty: new Uint8Array(0),
      buf: Buffer.from('héllo'),
      all: new Uint8Array(256).map((_, i) => i),
    });
    expect(back.view).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(back.view)).toBe(false);
    expect([...back.view]).toEqual([1, 2, 3]);
    expect(back.empty.length).toBe(0);
    expect(Buffer.isBuffer(back.buf)).toBe(true);
    expect(back.buf.toString()).toBe('héllo');
    expect([...back.all]).toEqual([...new Uint8Array(256).map((_, i) => i)]);
  });

  it('keeps undefined object fields as present keys, and undefined array items and holes', () => {
    // eslint-disable-next-line no-sparse-arrays
    const back = roundTrip({ u: undefined, nested: { u: undefined }, arr: [undefined, 1, , undefined] });
    expect(Object.hasOwn(back, 'u')).toBe(true);
    expect(back.u).toBeUndefined();
    expect(Object.hasOwn(back.nested, 'u')).toBe(true);
    expect(back.arr).toHaveLength(4);
    expect(back.arr).toEqual([undefined, 1, undefined, undefined]);
    expect(Object.hasOwn(back.arr, 2)).toBe(true);
  });

  it('round-trips a payload that is itself undefined, a Date or a primitive', () => {
    const decoded = jsonEnvelopeCodec.decode(jsonEnvelopeCodec.encode(envelope(undefined)));
    expect(Object.hasOwn(decoded, 'payload')).toBe(true);
    expect(decoded.payload).toBeUndefined();
    expect(roundTrip(new Date(3))).toEqual(new Date(3));
    expect(roundTrip('s')).toBe('s');
    expect(roundTrip(null)).toBeNull();
    expect(Object.is(roundTrip(-0), -0)).toBe(true);
  });

  it('round-trips NaN, Infinity, -Infinity and -0 without turning -0 into 0', () => {
    const back = roundTrip({ a: NaN, b: Infinity, c: -Infinity, d: -0, e: 0, list: [NaN, -0] });
    expect(back.a).toBeNaN();
    expect(back.b).toBe(Infinity);
    expect(back.c).toBe(-Infinity);
    expect(Object.is(back.d, -0)).toBe(true);
    expect(Object.is(back.e, 0)).toBe(true);
    expect(back.list[0]).toBeNaN();
    expect(Object.is(back.list[1], -0)).toBe(true);
  });

  it('duplicates shared (non-cyclic) references instead of refusing them', () => {
    const shared = { n: 1, when: new Date(2) };
    const back = roundTrip({ a: shared, b: shared, list: [shared, shared] });
    expect(back.a).toEqual(shared);
    expect(back.b).toEqual(shared);
    expect(back.a).not.toBe(back.b);
    expect(back.list[1]).toEqual(shared);
  });

  it('brings null-prototype objects back as plain objects', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1, d: new Date(1) });
    const back = roundTrip({ bare }).bare;
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect({ ...back }).toEqual({ a: 1, d: new Date(1) });
  });

  it('does not modify the payload it encodes', () => {
    const payload = { d: new Date(1), list: [1, undefined, { '~k': 2n }], m: new Map([['a', [NaN]]]) };
    const snapshot = { d: new Date(1), list: [1, undefined, { '~k': 2n }], m: new Map([['a', [NaN]]]) };
    jsonEnvelopeCodec.encode(envelope(payload));
    expect(payload).toEqual(snapshot);
    expect(Object.keys(payload.list[2] as object)).toEqual(['~k']);
  });

  it('returns independent objects on each decode of the same bytes', () => {
    const bytes = jsonEnvelopeCodec.encode(envelope({ a: { b: 1 } }));
    const first = jsonEnvelopeCodec.decode(bytes).payload as { a: { b: number } };
    first.a.b = 2;
    expect(jsonEnvelopeCodec.decode(bytes).payload).toEqual({ a: { b: 1 } });
  });
});

describe('jsonCodec key escaping', () => {
  it('escapes and unescapes keys starting with ~', () => {
    expect(escapeKey('~t')).toBe('~~t');
    expect(escapeKey('~~x')).toBe('~~~x');
    expect(escapeKey('a~')).toBe('a~');
    expect(unescapeKey('~~t')).toBe('~t');
    expect(unescapeKey('~~~x')).toBe('~~x');
    expect(unescapeKey('plain')).toBe('plain');
    expect(unescapeKey('~t')).toBeUndefined();
    expect(unescapeKey('~x')).toBeUndefined();
  });

  it('keeps user keys that look like tags as plain data', () => {
    const payload = {
      '~t': 'Date',
      v: '2026-01-01T00:00:00.000Z',
      '~~x': 1,
      '~': 2,
      inner: { '~t': 'undefined' },
      list: [{ '~t': 'BigInt', v: '1' }],
      map: new Map([['~t', { '~t': 'Map', v: [] }]]),
    };
    const wire = JSON.parse(jsonEnvelopeCodec.encode(envelope(payload)).toString('utf8')) as {
      payload: object;
    };
    expect(Object.keys(wire.payload)).toEqual(['~~t', 'v', '~~~x', '~~', 'inner', 'list', 'map']);
    const back = roundTrip(payload);
    expect(back).toEqual(payload);
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(typeof back.inner['~t']).toBe('string');
  });

  it('escapes only the key, never string values that start with ~', () => {
    const text = jsonEnvelopeCodec.encode(envelope({ a: '~t', b: ['~~x'] })).toString('utf8');
    expect(text).toContain('"payload":{"a":"~t","b":["~~x"]}');
    expect(roundTrip({ a: '~t', b: ['~~x'] })).toEqual({ a: '~t', b: ['~~x'] });
  });

  it('refuses a key with exactly one leading ~ that is not a tag', () => {
    expect(decodeError(withPayload('{"a":{"~x":1}}')).message).toMatch(
      /payload\.a has the key "~x".*reserved/,
    );
    expect(decodeError(withPayload('{"~~ok":1,"~bad":2}')).message).toMatch(
      /^cannot decode job job-1: payload has the key "~bad"/,
    );
  });

  it('refuses a tag object with extra keys', () => {
    expect(decodeError(withPayload('{"~t":"Date","v":"1970-01-01T00:00:00.000Z","x":1}')).message).toMatch(
      /payload is a tag object .* extra key "x"/,
    );
    expect(decodeError(withPayload('[{"~~y":1,"~t":"undefined"}]')).message).toMatch(
      /payload\[0\] .*extra key "~~y"/,
    );
  });
});

describe('jsonCodec encode refusals', () => {
  it('refuses functions with the path and what to do', () => {
    const e = encodeError({ user: { cb: () => 1 } });
    expect(e.code).toBe('DELAYQ_ENCODE');
    expect(e.message).toMatch(/payload\.user\.cb is a function \(cb\).*pass data instead/);
  });

  it('refuses symbols as values and as keys', () => {
    expect(encodeError({ list: [1, Symbol('s')] }).message).toMatch(
      /payload\.list\[1\] is a symbol \(Symbol\(s\)\)/,
    );
    expect(encodeError({ o: { [Symbol('k')]: 1 } }).message).toMatch(
      /payload\.o has a symbol-keyed property \(Symbol\(k\)\).*use a string key/,
    );
  });

  it('refuses cycles, naming both ends', () => {
    const root: Record<string, unknown> = { a: { b: [0] } };
    (root.a as { b: unknown[] }).b[1] = root.a;
    expect(encodeError(root).message).toMatch(
      /payload\.a\.b\[1\] refers back to payload\.a, which contains it \(a cycle\).*break it/,
    );
    const self: Record<string, unknown> = {};
    self.me = self;
    expect(encodeError(self).message).toMatch(/payload\.me refers back to payload,/);
    const map = new Map<string, unknown>();
    map.set('loop', [map]);
    expect(encodeError({ map }).message).toMatch(
      /payload\.map\.get\("loop"\)\[0\] refers back to payload\.map,/,
    );
    const set = new Set<unknown>();
    set.add({ set });
    expect(encodeError(set).message).toMatch(/payload\[set item #0\]\.set refers back to payload,/);
  });

  it('refuses class instances and unsupported built-ins, naming the class', () => {
    class Money {
      constructor(readonly cents: number) {}
    }
    expect(encodeError({ price: new Money(5) }).message).toMatch(
      /payload\.price is an instance of Money.*convert it to plain data/,
    );
    class List extends Array<number> {}
    expect(encodeError({ l: List.from([1]) }).message).toMatch(/payload\.l is an instance of List/);
    expect(encodeError([new Int16Array(2)]).message).toMatch(/payload\[0\] is an instance of Int16Array/);
    expect(encodeError({ r: /x/ }).message).toMatch(/payload\.r is an instance of RegExp/);
    expect(encodeError({ e: new Error('x') }).message).toMatch(/payload\.e is an instance of Error/);
    expect(encodeError({ s: new String('x') }).message).toMatch(/payload\.s is an instance of String/);
    class Stamp extends Date {}
    expect(encodeError({ d: new Stamp(0) }).message).toMatch(/payload\.d is an instance of Stamp/);
  });

  it('refuses Invalid Date', () => {
    expect(encodeError({ when: new Date('nope') }).message).toMatch(/payload\.when is an Invalid Date/);
    expect(encodeError(new Map([[new Date(NaN), 1]])).message).toMatch(
      /payload\[map key #0\] is an Invalid Date/,
    );
  });

  it('refuses own __proto__ keys and says to rename them', () => {
    const viaParse = JSON.parse('{"ok":{"__proto__":{"x":1}}}') as unknown;
    expect(encodeError(viaParse).message).toMatch(
      /payload\.ok\.__proto__ is an own property named "__proto__".*rename the key/,
    );
    const viaDefine = Object.defineProperty({}, '__proto__', { value: 1, enumerable: true });
    expect(encodeError(viaDefine).message).toMatch(/payload\.__proto__ .*rename the key/);
  });

  it('quotes keys that are not identifiers and names Map and Set positions', () => {
    expect(encodeError({ 'a b': [{ '~c': () => 0 }] }).message).toMatch(
      /payload\["a b"\]\[0\]\["~c"\] is a function/,
    );
    expect(encodeError(new Map([[{ k: 1 }, () => 0]])).message).toMatch(
      /payload\[map value #0\] is a function/,
    );
    expect(encodeError(new Map([[() => 0, 1]])).message).toMatch(/payload\[map key #0\] is a function/);
    expect(encodeError(new Map([[7, Symbol('x')]])).message).toMatch(/payload\.get\(7\) is a symbol/);
    expect(encodeError(new Set([1, 2, () => 0])).message).toMatch(/payload\[set item #2\] is a function/);
  });

  it('reports a throwing getter as an EncodeError with the cause', () => {
    const boom = new Error('boom');
    const e = encodeError({
      get bad(): number {
        throw boom;
      },
    });
    expect(e.message).toMatch(/payload\.bad could not be read: boom/);
    expect(e.cause).toBe(boom);
  });

  it('refuses nesting too deep for the stack as an EncodeError', () => {
    let deep: unknown = new Date(0);
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(encodeError(deep).message).toMatch(
      /payload could not be walked \(Maximum call stack size exceeded\), most likely because it is nested too deeply/,
    );
  });

  it('refuses envelopes it could not decode again', () => {
    expect(() => jsonEnvelopeCodec.encode({ ...envelope(1), v: 2 })).toThrow(/envelope\.v is 2/);
    expect(() => jsonEnvelopeCodec.encode({ ...envelope(1), version: 0 })).toThrow(
      /envelope\.version must be an integer >= 1/,
    );
    expect(() => jsonEnvelopeCodec.encode({ ...envelope(1), createdAt: NaN })).toThrow(
      /envelope\.createdAt must be a whole number of epoch ms/,
    );
    expect(() => jsonEnvelopeCodec.encode({ ...envelope(1), id: 5 as unknown as string })).toThrow(
      EncodeError,
    );
  });

  it('toTagged names paths under the given root', () => {
    expect(() => toTagged({ f: () => 0 }, 'args')).toThrow(/args\.f is a function/);
  });
});

describe('jsonCodec decode never pollutes prototypes', () => {
  it('refuses an own __proto__ key in the envelope', () => {
    const bytes = '{"v":1,"id":"j","version":1,"createdAt":1,"payload":1,"__proto__":{"polluted":1}}';
    expect(decodeError(bytes).message).toMatch(/envelope has an own "__proto__" key/);
    expect(polluted()).toBeUndefined();
  });

  it('refuses an own __proto__ key anywhere in the payload', () => {
    for (const payload of [
      '{"__proto__":{"polluted":1}}',
      '{"a":[{"b":{"__proto__":{"polluted":1}}}]}',
      '{"~t":"Map","v":[["k",{"__proto__":{"polluted":1}}]]}',
      '{"~t":"Map","v":[[{"__proto__":{"polluted":1}},1]]}',
      '{"~t":"Set","v":[{"__proto__":{"polluted":1}}]}',
      '{"~~esc":1,"__proto__":{"polluted":1}}',
      '{"__proto__":{"polluted":1},"~~esc":1}',
    ]) {
      const e = decodeError(withPayload(payload));
      expect(e.message).toMatch(/has an own "__proto__" key/);
      expect(polluted()).toBeUndefined();
      expect(Object.prototype).not.toHaveProperty('polluted');
    }
  });

  it('names the path of a nested __proto__ key', () => {
    expect(decodeError(withPayload('{"a":[{"b":{"__proto__":{}}}]}')).message).toMatch(
      /payload\.a\[0\]\.b has an own "__proto__" key/,
    );
  });

  it('keeps constructor.prototype as plain data', () => {
    const attack =
      '{"constructor":{"prototype":{"polluted":1}},"~~constructor":{"prototype":{"polluted":2}}}';
    const back = jsonEnvelopeCodec.decode(withPayload(attack)).payload as Record<string, unknown>;
    expect(polluted()).toBeUndefined();
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(Object.hasOwn(back, 'constructor')).toBe(true);
    expect(back.constructor).toEqual({ prototype: { polluted: 1 } });
    expect(back['~constructor']).toEqual({ prototype: { polluted: 2 } });
    expect(Object.getPrototypeOf(back.constructor)).toBe(Object.prototype);
    expect({}.constructor).toBe(Object);
  });

  it('treats constructor and prototype as unknown envelope fields', () => {
    expect(
      decodeError(
        '{"v":1,"id":"j","version":1,"createdAt":1,"payload":1,"constructor":{"prototype":{"polluted":1}}}',
      ).message,
    ).toMatch(/unknown field "constructor"/);
    expect(polluted()).toBeUndefined();
  });

  it('fromTagged refuses __proto__ under the given root', () => {
    expect(() => fromTagged(JSON.parse('{"x":{"__proto__":1}}'), 'args')).toThrow(
      /args\.x has an own "__proto__" key/,
    );
  });
});

describe('jsonCodec decode rejects malformed bytes', () => {
  const cases: Array<[string, Buffer | string, RegExp]> = [
    ['invalid JSON', '{"v":1,', /not valid JSON/],
    ['empty bytes', '', /not valid JSON/],
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), /not valid UTF-8/],
    ['a JSON array', '[1]', /envelope must be a JSON object, got an array/],
    ['JSON null', 'null', /envelope must be a JSON object, got null/],
    [
      'a newer format',
      '{"v":2,"id":"j","version":1,"createdAt":1,"payload":1}',
      /envelope format 2 is not supported/,
    ],
    [
      'v as a string',
      '{"v":"1","id":"j","version":1,"createdAt":1,"payload":1}',
      /envelope\.v must be a number/,
    ],
    [
      'missing v',
      '{"id":"j","version":1,"createdAt":1,"payload":1}',
      /envelope\.v must be a number, got undefined/,
    ],
    [
      'missing id',
      '{"v":1,"version":1,"createdAt":1,"payload":1}',
      /envelope\.id must be a string, got undefined/,
    ],
    [
      'numeric id',
      '{"v":1,"id":7,"version":1,"createdAt":1,"payload":1}',
      /envelope\.id must be a string, got number 7/,
    ],
    [
      'version 0',
      '{"v":1,"id":"j","version":0,"createdAt":1,"payload":1}',
      /envelope\.version must be an integer >= 1/,
    ],
    ['fractional version', '{"v":1,"id":"j","version":1.5,"createdAt":1,"payload":1}', /envelope\.version/],
    [
      'createdAt string',
      '{"v":1,"id":"j","version":1,"createdAt":"1","payload":1}',
      /envelope\.createdAt must be a whole number of epoch ms/,
    ],
    [
      'traceparent number',
      '{"v":1,"id":"j","version":1,"createdAt":1,"traceparent":1,"payload":1}',
      /envelope\.traceparent must be a string/,
    ],
    [
      'missing payload',
      '{"v":1,"id":"j","version":1,"createdAt":1}',
      /cannot decode job j: the envelope has no payload field/,
    ],
    [
      'an unknown envelope field',
      '{"v":1,"id":"j","version":1,"createdAt":1,"payload":1,"extra":1}',
      /unknown field "extra"/,
    ],
    [
      'an unknown tag',
      withPayload('{"a":{"~t":"Regex","v":"x"}}').toString(),
      /payload\.a has the unknown tag "Regex"/,
    ],
    ['a non-string tag', withPayload('{"~t":1}').toString(), /"~t" tag that is number 1, not a string/],
    ['a tag without v', withPayload('{"~t":"Date"}').toString(), /"Date" tag without its "v"/],
    ['undefined with v', withPayload('{"~t":"undefined","v":null}').toString(), /"undefined" tag with a "v"/],
    [
      'a bad number tag',
      withPayload('{"~t":"number","v":"1"}').toString(),
      /"number" tag whose value the string "1"/,
    ],
    [
      'a fractional BigInt',
      withPayload('{"~t":"BigInt","v":"1.5"}').toString(),
      /"BigInt" tag .* not a canonical decimal/,
    ],
    ['a non-numeric BigInt', withPayload('{"~t":"BigInt","v":"0x10"}').toString(), /"BigInt" tag/],
    ['a BigInt with a leading zero', withPayload('{"~t":"BigInt","v":"01"}').toString(), /"BigInt" tag/],
    ['BigInt -0', withPayload('{"~t":"BigInt","v":"-0"}').toString(), /"BigInt" tag/],
    ['a numeric BigInt', withPayload('{"~t":"BigInt","v":1}').toString(), /"BigInt" tag/],
    [
      'a non-canonical Date',
      withPayload('{"~t":"Date","v":"2026-01-01"}').toString(),
      /"Date" tag .* toISOString/,
    ],
    [
      'an impossible Date',
      withPayload('{"~t":"Date","v":"2026-02-30T00:00:00.000Z"}').toString(),
      /"Date" tag/,
    ],
    ['a numeric Date', withPayload('{"~t":"Date","v":0}').toString(), /"Date" tag/],
    [
      'a Date with +00:00',
      withPayload('{"~t":"Date","v":"2026-01-02T03:04:05.006+00:00"}').toString(),
      /"Date" tag .* \(YYYY-MM-DDTHH:mm:ss\.sssZ: UTC "Z", three millisecond digits/,
    ],
    [
      'a Date without milliseconds',
      withPayload('{"~t":"Date","v":"2026-01-02T03:04:05Z"}').toString(),
      /"Date" tag/,
    ],
    ['a fractional createdAt', '{"v":1,"id":"j","version":1,"createdAt":1.5,"payload":1}', /createdAt/],
    [
      'a raw integer beyond 2^53 - 1',
      withPayload('{"n":9007199254740993}').toString(),
      /integer literal 9007199254740993, beyond ±\(2\^53 - 1\).*\{"~t":"BigInt","v":"9007199254740993"\}/,
    ],
    ['a raw integer below -(2^53 - 1)', withPayload('[-9007199254740992]').toString(), /-9007199254740992/],
    [
      'a raw createdAt beyond 2^53 - 1',
      '{"v":1,"id":"j","version":1,"createdAt":12345678901234567890,"payload":1}',
      /integer literal 12345678901234567890/,
    ],
    [
      'a number tag whose integer no double equals',
      withPayload('{"~t":"number","v":"9007199254740993"}').toString(),
      /"number" tag whose value/,
    ],
    [
      'a number tag for a safe integer',
      withPayload('{"~t":"number","v":"12"}').toString(),
      /"number" tag whose value/,
    ],
    ['non-canonical base64', withPayload('{"~t":"Uint8Array","v":"AQI"}').toString(), /not canonical base64/],
    ['base64url', withPayload('{"~t":"Buffer","v":"-_8="}').toString(), /not canonical base64/],
    ['base64 with junk', withPayload('{"~t":"Buffer","v":"AQID!"}').toString(), /not canonical base64/],
    [
      'a Map that is not an array',
      withPayload('{"~t":"Map","v":{}}').toString(),
      /"Map" tag whose value is an object/,
    ],
    [
      'a Map entry that is not a pair',
      withPayload('{"~t":"Map","v":[[1,2],[3]]}').toString(),
      /payload\[map key #1\] is an array of length 1/,
    ],
    [
      'duplicate Map keys',
      withPayload('{"~t":"Map","v":[[1,2],[1,3]]}').toString(),
      /payload\[map key #1\] repeats an earlier key/,
    ],
    [
      'a Set that is not an array',
      withPayload('{"~t":"Set","v":"x"}').toString(),
      /"Set" tag whose value is the string/,
    ],
    [
      'duplicate Set items',
      withPayload('{"~t":"Set","v":[1,{"~t":"number","v":"-0"},0]}').toString(),
      /payload\[set item #2\] repeats/,
    ],
    [
      'a number out of range',
      withPayload('{"a":[1e400]}').toString(),
      /payload\.a\[0\] is a number literal outside the double range/,
    ],
    [
      'a bad tag deep inside',
      withPayload('[{"m":{"~t":"Map","v":[["k",{"~t":"Nope"}]]}}]').toString(),
      /payload\[0\]\.m\.get\("k"\) has the unknown tag "Nope"/,
    ],
  ];

  for (const [name, bytes, message] of cases) {
    it(`refuses ${name}`, () => {
      const e = decodeError(bytes);
      expect(e.code).toBe('DELAYQ_DECODE');
      expect(e.message).toMatch(message);
    });
  }

  it('refuses input that is not bytes', () => {
    expect(() => jsonEnvelopeCodec.decode('{}' as unknown as Buffer)).toThrow(DecodeError);
  });

  it('names the job id in payload errors', () => {
    expect(decodeError(withPayload('{"~t":"Nope"}')).message).toMatch(
      /^cannot decode job job-1: payload has the unknown tag/,
    );
  });
});

describe('integers beyond ±(2^53 - 1)', () => {
  it('accepts integer literals up to the safe limit and floats written with a fraction or exponent', () => {
    const bytes = withPayload(
      '[9007199254740991,-9007199254740991,1e300,1.5e20,12345678901234567890.5,"12345678901234567890"]',
    );
    expect(jsonEnvelopeCodec.decode(bytes).payload).toEqual([
      9007199254740991,
      -9007199254740991,
      1e300,
      1.5e20,
      Number('12345678901234567890.5'),
      '12345678901234567890',
    ]);
  });

  it('does not mistake digits inside strings, escaped quotes included, for numbers', () => {
    const bytes = withPayload('{"a\\"99999999999999999":"\\"99999999999999999"}');
    expect(jsonEnvelopeCodec.decode(bytes).payload).toEqual({ 'a"99999999999999999': '"99999999999999999' });
  });

  it('writes numbers JSON.stringify would print as unsafe integer literals as number tags, and reads them back', () => {
    for (const n of [2 ** 53, -(2 ** 60), 1e20, 9.99e20]) {
      const text = jsonEnvelopeCodec.encode(envelope({ n })).toString();
      expect(text).toContain(`{"n":{"~t":"number","v":"${BigInt(n).toString()}"}}`);
      expect(roundTrip(n)).toBe(n);
    }
    // From 1e21 on JSON.stringify writes an exponent, a double by its form.
    expect(jsonEnvelopeCodec.encode(envelope(1e21)).toString()).toContain('"payload":1e+21');
    expect(roundTrip(1e21)).toBe(1e21);
  });

  it('reads the number tag example of docs/PROTOCOL.md, 2^60 as its exact decimal, and refuses the rounded form', () => {
    const doc = readFileSync(join(import.meta.dirname, '../../docs/PROTOCOL.md'), 'utf8');
    const example = /e\.g\. `"(\d+)"`/.exec(doc)?.[1];
    expect(example).toBe('1152921504606846976');
    expect(jsonEnvelopeCodec.decode(withPayload(`{"~t":"number","v":"${example}"}`)).payload).toBe(2 ** 60);
    expect(jsonEnvelopeCodec.encode(envelope(2 ** 60)).toString()).toContain(
      `{"~t":"number","v":"${example}"}`,
    );
    // String(2 ** 60) is a shortest round-trip form, not the integer: refused, as any other
    // decimal no double equals exactly.
    expect(decodeError(withPayload('{"~t":"number","v":"1152921504606847000"}')).message).toMatch(
      /exact decimal integer of a double/,
    );
  });

  it('keeps BigInt tags exact where the raw literal would round', () => {
    const bytes = withPayload('{"~t":"BigInt","v":"9007199254740993"}');
    expect(jsonEnvelopeCodec.decode(bytes).payload).toBe(9007199254740993n);
  });
});

describe('duplicate object keys', () => {
  const payloadError = (text: string): string => {
    try {
      jsonCodec.decodePayload(Buffer.from(text));
    } catch (e) {
      expect(e).toBeInstanceOf(DecodeError);
      return (e as Error).message;
    }
    throw new Error(`${text} decoded`);
  };

  it('are refused, at any depth and however the key is escaped, never last-wins', () => {
    expect(payloadError('{"a":1,"b":2,"a":3}')).toMatch(/repeats the key "a"/);
    expect(payloadError('[{"x":[{"k":1, "k" :2}]}]')).toMatch(/repeats the key "k"/);
    expect(payloadError('{"a":1,"\\u0061":2}')).toMatch(/repeats the key "a"/);
    expect(payloadError('{"~t":"number","~t":"BigInt","v":"1"}')).toMatch(/repeats the key "~t"/);
    expect(decodeError(withPayload('{"n":1,"n":2}')).message).toMatch(/repeats the key "n"/);
    // Past 16 keys the lookup goes through a Set; a nested object's keys never count for its parent.
    const many = Array.from({ length: 40 }, (_, i) => `"k${i}":{"k${i}":1}`).join(',');
    expect(jsonCodec.decodePayload(Buffer.from(`{${many}}`))).toHaveProperty('k39', { k39: 1 });
    expect(payloadError(`{${many},"k7":2}`)).toMatch(/repeats the key "k7"/);
    expect(payloadError(`{"a":{"x":1,"y":2},"b":[1,{"a":1}],"a":3}`)).toMatch(/repeats the key "a"/);
  });

  it('are told apart from equal keys of different objects and from colons and quotes inside strings', () => {
    const text = '{"a":{"a":1,"b":"x\\":y"},"b":[{"a":2},{"a":3}],"c":"\\\\","d":"k:v"}';
    expect(jsonCodec.decodePayload(Buffer.from(text))).toEqual({
      a: { a: 1, b: 'x":y' },
      b: [{ a: 2 }, { a: 3 }],
      c: '\\',
      d: 'k:v',
    });
  });

  it('are looked for afresh in each payload: nothing of the previous one counts (its lists are reused)', () => {
    // A refusal found deep in a nested object, then payloads whose keys were the previous ones'.
    const many = Array.from({ length: 40 }, (_, i) => `"k${i}":1`).join(',');
    expect(payloadError(`[{"a":{"b":{"c":1,"c":2}}}]`)).toMatch(/repeats the key "c"/);
    expect(jsonCodec.decodePayload(Buffer.from('{"c":1,"b":2,"a":3}'))).toEqual({ c: 1, b: 2, a: 3 });
    expect(payloadError(`{${many},"k3":2}`)).toMatch(/repeats the key "k3"/);
    expect(jsonCodec.decodePayload(Buffer.from(`[{"k3":1,"k4":2},{"k3":1}]`))).toEqual([
      { k3: 1, k4: 2 },
      { k3: 1 },
    ]);
    expect(payloadError('{"x":{"y":1},"z":2,"x":3}')).toMatch(/repeats the key "x"/);
  });
});
