/**
 * Small readers for script replies, so each operation states the shape it expects and a reply of
 * any other shape fails loudly instead of turning into undefined.
 */
import type { Reply } from '../redis/scripts.js';

/** The reply as an array, or an error naming the script. */
export function asArray(reply: Reply, script: string): Reply[] {
  if (!Array.isArray(reply)) throw new Error(`${script}: expected an array reply, got ${typeof reply}`);
  return reply;
}

/** Element `i` as a number (integer replies, or numeric bulk strings). */
export function num(reply: Reply[], i: number, script: string): number {
  const value = reply[i];
  if (typeof value === 'number') return value;
  if (Buffer.isBuffer(value)) {
    const parsed = Number(value.toString());
    if (!Number.isNaN(parsed)) return parsed;
  }
  throw new Error(`${script}: expected a number at position ${i} of the reply`);
}

/** Element `i` as a UTF-8 string. */
export function str(reply: Reply[], i: number, script: string): string {
  const value = reply[i];
  if (Buffer.isBuffer(value)) return value.toString();
  if (typeof value === 'number') return String(value);
  throw new Error(`${script}: expected a string at position ${i} of the reply`);
}

/** Element `i` as raw bytes. */
export function bytes(reply: Reply[], i: number, script: string): Buffer {
  const value = reply[i];
  if (Buffer.isBuffer(value)) return value;
  throw new Error(`${script}: expected bytes at position ${i} of the reply`);
}

/** Element `i` as a string, or null for a nil/false reply. */
export function optionalStr(reply: Reply[], i: number): string | null {
  const value = reply[i];
  return Buffer.isBuffer(value) ? value.toString() : null;
}
