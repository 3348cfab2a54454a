/**
 * The record examples of docs/PROTOCOL.md ("The record"), read off the document as it stands:
 * each hex example decodes to the fields its sentence names, and the encoder writes exactly those
 * bytes back. (The redis-cli, config.lua and ACL examples run against Redis in
 * test/integration/protocol.test.ts, protocol-holes.test.ts and python-producer.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { decodeRecord, encodeRecord } from '../../src/record/index.js';

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
