/**
 * A payload as tagged JSON (the wire format at the top of json.ts). The shared walk (walk.ts)
 * validates everything and copies only the containers on the path to a special value, so a payload
 * with nothing special is handed to the native JSON.stringify as is.
 */
import { EncodeError } from '../errors.js';
import { escapeKey, EXPONENT_FROM } from './json-tags.js';
import { wireWalker } from './walk.js';
import { formatPath, Problem } from './validate.js';

// Frozen and shared: tags without a payload-specific value need no allocation per occurrence.
const UNDEFINED_TAG = Object.freeze({ '~t': 'undefined' });
const NAN_TAG = Object.freeze({ '~t': 'number', v: 'NaN' });
const INFINITY_TAG = Object.freeze({ '~t': 'number', v: 'Infinity' });
const NEG_INFINITY_TAG = Object.freeze({ '~t': 'number', v: '-Infinity' });
const NEG_ZERO_TAG = Object.freeze({ '~t': 'number', v: '-0' });

const SUPPORTED =
  'plain objects, arrays, strings, finite and non-finite numbers, booleans, null, undefined, bigint, Date, Map, Set, Uint8Array and Buffer';

function encodeNumber(n: number): unknown {
  if (n - n === 0) {
    if (n === 0) return 1 / n < 0 ? NEG_ZERO_TAG : n;
    // JSON.stringify would write an integer literal beyond ±(2^53 - 1), which readers refuse.
    const size = n < 0 ? -n : n;
    // The exact integer, not String(n): every language prints that one the same way (docs/PROTOCOL.md).
    return size > Number.MAX_SAFE_INTEGER && size < EXPONENT_FROM
      ? { '~t': 'number', v: BigInt(n).toString() }
      : n;
  }
  return n !== n ? NAN_TAG : n > 0 ? INFINITY_TAG : NEG_INFINITY_TAG;
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** What JSON lacks, as tag objects (the table at the top of json.ts). */
const walkToTagged = wireWalker({
  codec: 'json',
  format: 'JSON',
  supported: SUPPORTED,
  maxDepth: Number.POSITIVE_INFINITY,
  string: (s) => s,
  key: escapeKey,
  number: encodeNumber,
  bigint: (n) => ({ '~t': 'BigInt', v: n.toString() }),
  undefined: UNDEFINED_TAG,
  date: (d) => ({ '~t': 'Date', v: d.toISOString() }),
  uint8Array: (u) => ({ '~t': 'Uint8Array', v: base64(u) }),
  buffer: (b) => ({ '~t': 'Buffer', v: b.toString('base64') }),
  map: (flat) => {
    const entries: unknown[] = [];
    for (let i = 0; i < flat.length; i += 2) entries.push([flat[i], flat[i + 1]]);
    return { '~t': 'Map', v: entries };
  },
  set: (items) => ({ '~t': 'Set', v: items }),
});

/**
 * Returns the JSON-ready tagged form of `value` (sharing unchanged subtrees with it), or throws EncodeError
 * naming the offending path under `root`.
 */
export function toTagged(value: unknown, root = 'payload'): unknown {
  try {
    return walkToTagged(value);
  } catch (e) {
    if (e instanceof Problem) {
      const path = formatPath(root, e.segments);
      const problem =
        e.refersToDepth === undefined
          ? e.message
          : `refers back to ${formatPath(root, e.segments, e.refersToDepth)}, which contains it (a cycle); ${e.message}`;
      throw new EncodeError(`cannot encode job: ${path} ${problem}`, { cause: e.cause });
    }
    if (e instanceof RangeError) {
      throw new EncodeError(
        `cannot encode job: ${root} could not be walked (${e.message}), most likely because it is nested too deeply; flatten the data or store it elsewhere and enqueue a reference`,
        { cause: e },
      );
    }
    throw e;
  }
}
