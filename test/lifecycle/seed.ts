/**
 * Seeding for the lifecycle script tests (fail, release, reap, cancel, progress, dead-*,
 * reschedule, trim): job records built byte by byte from docs/ARCHITECTURE.md §3.2, written
 * straight into Redis, so each test starts from exactly the state it names and asserts every key
 * the script may touch. Built here rather than with src/record's encoder so the scripts are checked
 * against the format's text, not against another piece of the same code.
 */
import { expect } from 'vitest';
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../../src/redis/keys.js';

/** The header fields a lifecycle test sets; everything else is left at the format's default. */
export interface RecordSeed {
  /** A claim block (flag C) when set. */
  claim?: { attempts: number; claims: number; claimedAt: number; runDue: number; holder: number };
  /** Max attempts (flag M); absent: the default 3. */
  max?: number;
  /** Priority (flag P), never 0. */
  prio?: number;
  /** Flag E: a last error is stored in `e`. */
  hasError?: boolean;
  payload?: string;
}

/** The record bytes of `seed`. */
export function record(seed: RecordSeed): Buffer {
  let a = 0;
  const parts: Buffer[] = [];
  if (seed.claim) {
    a |= 0x01;
    const c = Buffer.alloc(20);
    c.writeUInt16BE(seed.claim.attempts, 0);
    c.writeUInt16BE(seed.claim.claims, 2);
    c.writeUIntBE(seed.claim.claimedAt, 4, 6);
    c.writeUIntBE(seed.claim.runDue, 10, 6);
    c.writeUInt32BE(seed.claim.holder, 16);
    parts.push(c);
  }
  if (seed.max !== undefined) {
    a |= 0x02;
    const m = Buffer.alloc(2);
    m.writeUInt16BE(seed.max);
    parts.push(m);
  }
  if (seed.prio !== undefined) {
    a |= 0x08;
    const p = Buffer.alloc(2);
    p.writeInt16BE(seed.prio);
    parts.push(p);
  }
  const head = seed.hasError ? Buffer.from([0x01, a | 0x80, 0x04]) : Buffer.from([0x01, a]);
  return Buffer.concat([head, ...parts, Buffer.from(seed.payload ?? '{"to":"ada@example.com"}')]);
}

/** The lease member of a claim: "<claims>.<claimed at>|<id>". */
export function memberOf(id: string, claim: { claims: number; claimedAt: number }): string {
  return `${claim.claims}.${claim.claimedAt}|${id}`;
}

/** A completed record without a result, and a cancelled record (§3.2). */
export const COMPLETED = Buffer.from([0x01, 0x80, 0x08]);
export const CANCELLED = Buffer.from([0x01, 0x80, 0x10]);

/**
 * The cancelled record of a job cancelled after a claim (default max attempts): it keeps the
 * claim block (flags A C|0x80, flags B Q, then the block), so get() shows the attempts used.
 */
export function cancelledAfter(claim: NonNullable<RecordSeed['claim']>): Buffer {
  const block = Buffer.alloc(20);
  block.writeUInt16BE(claim.attempts, 0);
  block.writeUInt16BE(claim.claims, 2);
  block.writeUIntBE(claim.claimedAt, 4, 6);
  block.writeUIntBE(claim.runDue, 10, 6);
  block.writeUInt32BE(claim.holder, 16);
  return Buffer.concat([Buffer.from([0x01, 0x81, 0x10]), block]);
}

/** Score of a due prioritized job in `r`: (prio + 1024) * 2^42 + due. */
export function readyScore(prio: number, due: number): number {
  return (prio + 1024) * 2 ** 42 + due;
}

/** Every key of the queue that holds something, with its type: what a test expects to be left. */
export async function nonEmptyKeys(c: Redis, keys: QueueKeys): Promise<string[]> {
  const names = new Set(Object.values(keys));
  const found: string[] = [];
  for (const name of names) if ((await c.exists(name)) === 1) found.push(name);
  return found.sort();
}

/** The events in the stream, as { type, id } pairs in order. */
export async function events(c: Redis, keys: QueueKeys): Promise<Array<{ type: string; id: string }>> {
  const entries = await c.xrange(keys.events, '-', '+');
  return entries.map(([, fields]) => {
    const map = new Map<string, string>();
    for (let i = 0; i < fields.length; i += 2) map.set(fields[i] ?? '', fields[i + 1] ?? '');
    return { type: map.get('type') ?? '', id: map.get('id') ?? '' };
  });
}

/** The counters hash as numbers. */
export async function counters(c: Redis, keys: QueueKeys): Promise<Record<string, number>> {
  const raw = await c.hgetall(keys.counters);
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Number(v)]));
}

/** The stored record of `id` as bytes. */
export async function storedRecord(c: Redis, keys: QueueKeys, id: string): Promise<Buffer | null> {
  return c.hgetBuffer(keys.records, id);
}

/** Assert `at` lies in [lo, hi]. */
export function expectWithin(at: number, lo: number, hi: number): void {
  expect(at).toBeGreaterThanOrEqual(lo);
  expect(at).toBeLessThanOrEqual(hi);
}
