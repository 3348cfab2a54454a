/**
 * The check and encoding of a `job.progress()` value: plain JSON data only, so what the dashboard
 * and `queue.get()` show is exactly what the handler reported (docs/DESIGN.md invariant 10: nothing is
 * silently altered, as JSON.stringify would alter undefined, NaN, a Date or a Map).
 */
import { ProgressTooLargeError, ValidationError } from '../errors.js';

/** The longest progress value accepted, in bytes of JSON: a summary, not a result. */
export const PROGRESS_MAX_BYTES = 4_096;

/** How deep a progress value may nest. */
const MAX_DEPTH = 32;

/**
 * `value` as JSON. Throws ValidationError (with the path of the offending part) unless it is JSON
 * data: null, a boolean, a finite number, a string, an array or a plain object of these, without
 * cycles. Throws ProgressTooLargeError when the JSON is over `capBytes`.
 */
export function encodeProgress(jobId: string, value: unknown, capBytes = PROGRESS_MAX_BYTES): string {
  const problem = findProblem(value, 'progress', [], 0);
  if (problem) {
    throw new ValidationError(
      `job ${jobId}: progress ${problem.path} ${problem.message}; nothing was written. Report JSON data (numbers, strings, booleans, null, arrays, plain objects)`,
      [problem],
    );
  }
  const json = JSON.stringify(value);
  const size = Buffer.byteLength(json, 'utf8');
  if (size > capBytes) throw new ProgressTooLargeError(jobId, size, capBytes);
  return json;
}

interface Problem {
  path: string;
  message: string;
}

function findProblem(value: unknown, path: string, ancestors: object[], depth: number): Problem | null {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      return Number.isFinite(value) ? null : { path, message: `is ${value}, which JSON cannot hold` };
    case 'bigint':
      return { path, message: 'is a BigInt, which JSON cannot hold; report it as a string' };
    case 'undefined':
      return { path, message: 'is undefined, which JSON drops; use null' };
    case 'function':
      return { path, message: 'is a function' };
    case 'symbol':
      return { path, message: 'is a symbol' };
  }
  if (value === null) return null;
  const obj = value as object;
  if (ancestors.includes(obj)) return { path, message: 'is a cycle (it contains itself)' };
  if (depth >= MAX_DEPTH) return { path, message: `nests deeper than ${MAX_DEPTH} levels` };
  const inner = [...ancestors, obj];
  if (Array.isArray(obj)) {
    for (let i = 0; i < obj.length; i++) {
      const found = findProblem(obj[i], `${path}[${i}]`, inner, depth + 1);
      if (found) return found;
    }
    return null;
  }
  const proto: unknown = Object.getPrototypeOf(obj);
  if (proto !== Object.prototype && proto !== null) {
    const kind = (obj as { constructor?: { name?: unknown } }).constructor?.name;
    return {
      path,
      message: `is a ${typeof kind === 'string' ? kind : 'class instance'}, not a plain object; convert it first`,
    };
  }
  if (Object.getOwnPropertySymbols(obj).length > 0) return { path, message: 'has symbol keys' };
  for (const [key, item] of Object.entries(obj)) {
    const found = findProblem(item, `${path}.${key}`, inner, depth + 1);
    if (found) return found;
  }
  return null;
}
