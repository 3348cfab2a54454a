/**
 * Payloads can hold what JSON cannot (BigInt, Map, Set, bytes, undefined, Dates); the dashboard and
 * the CLI show them through this one conversion to plain JSON values.
 */

/** A plain-JSON view of `value`: BigInt -> "123n", Map -> object of entries, Set -> array, bytes -> base64. */
export function toPlain(value: unknown, seen = new WeakSet<object>()): unknown {
  if (value === undefined) return null;
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value !== 'object' || value === null) {
    return typeof value === 'function' || typeof value === 'symbol' ? String(value) : value;
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (seen.has(value)) return '[circular]';
  seen.add(value);
  try {
    if (value instanceof Uint8Array) return { base64: Buffer.from(value).toString('base64') };
    if (value instanceof Map) {
      return Object.fromEntries([...value.entries()].map(([k, v]) => [String(k), toPlain(v, seen)]));
    }
    if (value instanceof Set) return [...value].map((v) => toPlain(v, seen));
    if (Array.isArray(value)) return value.map((v) => toPlain(v, seen));
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = toPlain(v, seen);
    return out;
  } finally {
    seen.delete(value);
  }
}
