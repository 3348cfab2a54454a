/**
 * The examples of docs/PROTOCOL.md, read off the document as it stands: each record example decodes
 * to the fields its sentence names and the encoder writes exactly those bytes back; the packed add
 * example is what the packer writes; the partition example is FNV-1a's; every key the page names is
 * one src/redis/keys.ts builds; the json codec's tag examples decode as the table says and its
 * refused forms are refused; the msgpack section's claims hold. (The redis-cli, config.lua, elapsed
 * and ACL examples run against Redis in test/integration/protocol.test.ts, protocol-holes.test.ts
 * and python-producer.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonCodec } from '../../src/codec/json.js';
import { msgpackCodec } from '../../src/codec/msgpack.js';
import { packAddJobs } from '../../src/operations/add-pack.js';
import { partitionOf } from '../../src/partition/index.js';
import { decodeRecord, encodeRecord } from '../../src/record/index.js';
import { configKey, legacyKeys, partitionKeys, queueKeys } from '../../src/redis/keys.js';

const doc = readFileSync(join(import.meta.dirname, '../../docs/PROTOCOL.md'), 'utf8');
const section = doc.slice(doc.indexOf('Examples, as hex'), doc.indexOf('A producer writes only M, B'));
const bullets = section
  .split('\n- ')
  .slice(1)
  .map((b) => b.replace(/\s+/g, ' '));

/** The bytes of the hex code spans of a bullet up to `+` (the payload that follows). */
function hexOf(bullet: string, nth = 0): Buffer {
  const runs = bullet.split(/;|\+ payload|\+ the|\+ result/)[nth] ?? '';
  const spans = [...runs.matchAll(/`((?:[0-9A-F]{2} ?)+)`/g)].map((m) => m[1]!.replaceAll(' ', ''));
  return Buffer.from(spans.join(''), 'hex');
}

const PAYLOAD = Buffer.from('{"to":"ada@example.com"}');

it('every record example decodes to what its sentence says and is what the encoder writes', () => {
  expect(bullets).toHaveLength(7);
  const check = (bytes: Buffer, fields: Record<string, unknown>): void => {
    const record = Buffer.concat([bytes, PAYLOAD]);
    const { header, payload } = decodeRecord(record);
    expect(header).toMatchObject(fields);
    expect(payload).toEqual(PAYLOAD);
    expect(encodeRecord(header, payload)).toEqual(record);
  };
  expect(hexOf(bullets[0]!)).toEqual(Buffer.from([0x01, 0x00]));
  expect(bullets[0]).toContain(`${PAYLOAD.length} payload bytes; ${PAYLOAD.length + 2} bytes in all`);
  check(hexOf(bullets[0]!), { maxAttempts: 3, priority: 0, attempts: 0 });
  check(hexOf(bullets[1]!), { maxAttempts: 5, priority: -5 });
  check(hexOf(bullets[2]!), {
    attempts: 2,
    claims: 2,
    claimedAt: 1767225600123,
    runDue: 1767225600000,
    holder: 7,
    maxAttempts: 5,
    priority: -5,
  });
  const traceparent = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
  expect(traceparent).toHaveLength(55);
  check(Buffer.concat([hexOf(bullets[3]!), Buffer.from(traceparent)]), { version: 2, traceparent });
  check(hexOf(bullets[4]!), {
    maxAttempts: 10,
    backoff: { type: 'fixed', delay: 5000, jitter: true },
    timeoutMs: 30000,
  });
  // Final records keep the claim block and max attempts.
  const spans = [...bullets[5]!.matchAll(/`((?:[0-9A-F]{2} ?)+)`/g)].map((m) =>
    Buffer.from(m[1]!.replaceAll(' ', ''), 'hex'),
  );
  // `42` is the result as text; then 01 83 28, the claim block, 00 05, and the result bytes 34 32.
  const completed = decodeRecord(Buffer.concat(spans.slice(1, 5)));
  expect(completed.header).toMatchObject({
    completed: true,
    hasResult: true,
    attempts: 3,
    claims: 3,
    claimedAt: 1767225600123,
    runDue: 1767225600000,
    holder: 7,
    maxAttempts: 5,
  });
  expect(completed.payload.toString()).toBe('42');
  expect(decodeRecord(Buffer.concat([spans[5]!, spans[2]!])).header).toMatchObject({
    cancelled: true,
    attempts: 3,
  });
  expect(decodeRecord(spans[6]!).header).toMatchObject({ cancelled: true, attempts: 0 });
  // Records of delayq 0.2: no claim block.
  const old = [...bullets[6]!.matchAll(/`((?:[0-9A-F]{2} ?)+)`/g)].map((m) =>
    Buffer.from(m[1]!.replaceAll(' ', ''), 'hex'),
  );
  expect(old).toHaveLength(3);
  expect(decodeRecord(old[0]!).header).toMatchObject({ completed: true, hasResult: false, attempts: 0 });
  expect(decodeRecord(old[1]!).header).toMatchObject({ completed: true, hasResult: true, attempts: 0 });
  expect(decodeRecord(old[2]!).header).toMatchObject({ cancelled: true, attempts: 0 });
});

/** The paragraph of the document that begins with `start`, up to the next blank line. */
function paragraph(start: string): string {
  const from = doc.indexOf(start);
  expect(from, start).toBeGreaterThan(-1);
  return doc.slice(from, doc.indexOf('\n\n', from)).replace(/\s+/g, ' ');
}

it('the packed add example is what the packer writes', () => {
  const text = paragraph('For example the job of the redis-cli example below, packed');
  // The code spans in order, but those in parentheses (a path, and what the span before holds).
  const spans = [...text.matchAll(/`([^`]+)`/g)].filter((m) => text[m.index - 1] !== '(').map((m) => m[1]!);
  const bytes = spans.map((span) =>
    /^(?:[0-9A-F]{2} ?)+$/.test(span) ? Buffer.from(span.replaceAll(' ', ''), 'hex') : Buffer.from(span),
  );
  const record = Buffer.concat([Buffer.from('0108fffb', 'hex'), PAYLOAD]);
  expect(text).toContain(`then its ${record.length}-byte record`);
  expect(packAddJobs([{ id: 'welcome:42', when: { delay: 600_000 }, record, mode: 'keep' }])).toEqual(
    Buffer.concat([...bytes, record]),
  );
});

it("the partition example is FNV-1a's, as delayq places jobs", () => {
  const match =
    /`fnv1a32\("([^"]+)"\)` is `0x([0-9a-f]{8})`, so\s+with `partitions: (\d+)` the job `[^`]+` lives in partition (\d+)/.exec(
      doc,
    );
  expect(match).not.toBeNull();
  const [, id, hex, partitions, partition] = match!;
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(id!, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  expect(hash.toString(16).padStart(8, '0')).toBe(hex);
  expect(partitionOf(id!, Number(partitions))).toBe(Number(partition));
  expect(hash % Number(partitions)).toBe(Number(partition));
});

it('names only keys that src/redis/keys.ts builds (layout-1 keys only in its section on them)', () => {
  const layout1 = doc.indexOf('## Layout 1 and `delayq migrate`');
  const current = new Set([
    ...Object.values(queueKeys('q')),
    ...Object.values(partitionKeys('q', 2)[0]!),
    configKey('q'),
  ]);
  const legacy = new Set(Object.values(legacyKeys('q')));
  const named = [...doc.matchAll(/dq:\{q(?:#\d+)?\}:\w+(?::\w+)*(?::<[^>]*>)?/g)];
  expect(named.length).toBeGreaterThan(30);
  const unknown = named
    .map((m) => ({ key: m[0].replace(/:<[^>]*>$/, ''), at: m.index }))
    .filter(({ key, at }) => !current.has(key) && !(at > layout1 && legacy.has(key)));
  expect(unknown).toEqual([]);
});

describe('the json codec section', () => {
  const decode = (text: string): unknown => jsonCodec.decodePayload(Buffer.from(text));
  const section = doc.slice(
    doc.indexOf('## Payload encoding (codec `json`)'),
    doc.indexOf('## Payload encoding (codec `protobuf`)'),
  );

  it('every tag example of its table decodes to the type it names', () => {
    const tags = [...section.matchAll(/^\| (`\{"~t".*?) +\|/gm)].flatMap((m) =>
      [...m[1]!.matchAll(/`(\{"~t":[^`]*\})`/g)].map((t) => t[1]!),
    );
    const examples = tags.filter((t) => !t.includes('…'));
    expect(examples).toEqual([
      '{"~t":"undefined"}',
      '{"~t":"number","v":"NaN"}',
      '{"~t":"Date","v":"2026-01-02T03:04:05.006Z"}',
      '{"~t":"BigInt","v":"-123"}',
      '{"~t":"Uint8Array","v":"AAEC"}',
      '{"~t":"Buffer","v":"AAEC"}',
    ]);
    expect(decode(examples[0]!)).toBeUndefined();
    expect(decode(examples[1]!)).toBeNaN();
    expect(decode(examples[2]!)).toEqual(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)));
    expect(decode(examples[3]!)).toBe(-123n);
    expect(decode(examples[4]!)).toEqual(new Uint8Array([0, 1, 2]));
    expect(decode(examples[5]!)).toEqual(Buffer.from([0, 1, 2]));
  });

  it("the number tag's values decode, and the rounded form is refused", () => {
    const row = section.split('\n').find((l) => l.startsWith('| `{"~t":"number"'))!;
    const values = [...row.matchAll(/`"([^"`]+)"`/g)].map((m) => m[1]!);
    expect(values).toEqual([
      'NaN',
      'Infinity',
      '-Infinity',
      '-0',
      '1152921504606846976',
      '1152921504606847000',
    ]);
    const tag = (v: string): string => `{"~t":"number","v":"${v}"}`;
    expect(decode(tag('Infinity'))).toBe(Infinity);
    expect(decode(tag('-Infinity'))).toBe(-Infinity);
    expect(Object.is(decode(tag('-0')), -0)).toBe(true);
    expect(decode(tag(values[4]!))).toBe(2 ** 60);
    expect(() => decode(tag(values[5]!))).toThrow();
  });

  it('the Date forms it refuses fail to decode', () => {
    const row = section.split('\n').find((l) => l.startsWith('| `{"~t":"Date"'))!;
    expect(row).toContain('`+00:00`, no milliseconds, or `2026-02-30` fail to decode');
    expect(row).toContain('`-000000` refused');
    const date = (v: string): string => `{"~t":"Date","v":"${v}"}`;
    for (const v of [
      '2026-01-02T03:04:05.006+00:00',
      '2026-01-02T03:04:05Z',
      '2026-02-30T03:04:05.006Z',
      '-000000-01-02T03:04:05.006Z',
    ]) {
      expect(() => decode(date(v)), v).toThrow();
    }
  });

  it('its examples of an object that holds one key twice fail to decode', () => {
    const text = paragraph('- An object that holds one key twice');
    const examples = [...text.matchAll(/`(\{[^`]*\})`/g)].map((m) => m[1]!);
    expect(examples).toEqual(['{"a":1,"a":2}', '{"a":1,"\\u0061":2}']);
    for (const example of examples) expect(() => decode(example), example).toThrow();
    expect(decode('{"a":1,"b":2}')).toEqual({ a: 1, b: 2 });
  });

  it('escapes a key that starts with ~ by one more ~', () => {
    expect(jsonCodec.encodePayload({ '~t': 1 }).toString()).toBe('{"~~t":1}');
    expect(decode('{"~~t":1}')).toEqual({ '~t': 1 });
  });
});

describe('the msgpack codec section', () => {
  it('reads 300 written as int 32, and writes it in the smallest form', () => {
    expect(msgpackCodec.decodePayload(Buffer.from('d20000012c', 'hex'))).toBe(300);
    expect(msgpackCodec.encodePayload(300).toString('hex')).toBe('cd012c');
  });

  it('writes a key ~t as it is, and refuses a map that holds one key twice', () => {
    expect(msgpackCodec.encodePayload({ '~t': 1 }).toString('hex')).toBe('81a27e7401');
    expect(msgpackCodec.decodePayload(Buffer.from('81a27e7401', 'hex'))).toEqual({ '~t': 1 });
    expect(() => msgpackCodec.decodePayload(Buffer.from('82a16101a16102', 'hex'))).toThrow();
  });
});
