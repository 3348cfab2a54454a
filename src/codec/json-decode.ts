/**
 * A parsed tagged JSON tree (the wire format at the top of json.ts) back to the value it stands
 * for. JSON.parse builds the tree (it defines "__proto__" as an ordinary own key and never touches
 * a prototype); the walk then replaces tags in place and only rebuilds objects whose keys need
 * unescaping. Assigning into a parsed object is safe because the key is always an existing own
 * data property that is not "__proto__", and rebuilt objects are filled with defineProperty so no
 * setter can run.
 */
import { DecodeError } from '../errors.js';
import { CANONICAL_BIGINT, DATE_PATTERN, EXPONENT_FROM, TAG_KEY, TILDE, unescapeKey } from './json-tags.js';
import { at, describe, errorMessage, formatPath, keySegment, mapValueSegment, Problem } from './validate.js';

function decodeAny(value: unknown): unknown {
  if (typeof value === 'object') {
    if (value === null) return null;
    return Array.isArray(value) ? decodeArray(value) : decodeObject(value as Record<string, unknown>);
  }
  // JSON.parse turns number literals beyond the double range into Infinity; the encoder never writes one.
  if (typeof value === 'number' && value - value !== 0) {
    throw new Problem('is a number literal outside the double range');
  }
  return value;
}

function decodeArray(a: unknown[]): unknown[] {
  let i = 0;
  try {
    for (; i < a.length; i++) {
      const item = a[i];
      if (typeof item === 'object' || typeof item === 'number') {
        const decoded = decodeAny(item);
        if (decoded !== item) a[i] = decoded;
      }
    }
  } catch (e) {
    throw at(e, `[${i}]`, 'decoded');
  }
  return a;
}

function decodeObject(o: Record<string, unknown>): unknown {
  const keys = Object.keys(o);
  let i = 0;
  try {
    for (; i < keys.length; i++) {
      const key = keys[i]!;
      if (key.charCodeAt(0) === TILDE || key === '__proto__') break;
      const item = o[key];
      if (typeof item === 'object' || typeof item === 'number') {
        const decoded = decodeAny(item);
        if (decoded !== item) o[key] = decoded;
      }
    }
  } catch (e) {
    throw at(e, keySegment(keys[i] ?? ''), 'decoded');
  }
  if (i === keys.length) return o;
  // Outside the try: these are problems of this object itself, not of the member at keys[i].
  if (keys[i] === '__proto__') throw protoKeyProblem();
  return Object.hasOwn(o, TAG_KEY) ? decodeTag(o, keys) : rebuildEscaped(o, keys, i);
}

function protoKeyProblem(): Problem {
  return new Problem(
    'has an own "__proto__" key, which the encoder never writes; refusing it keeps prototypes safe',
  );
}

/** Keys before `start` already hold decoded values; keys from `start` on are still wire values. */
function rebuildEscaped(o: Record<string, unknown>, keys: readonly string[], start: number): unknown {
  // Validated up front so that a bad key is reported as a problem of this object, not of a member.
  const userKeys = keys.map((key) => {
    if (key === '__proto__') throw protoKeyProblem();
    const userKey = unescapeKey(key);
    if (userKey === undefined) {
      throw new Problem(
        `has the key ${JSON.stringify(key)}; keys with exactly one leading "~" are reserved (user keys starting with "~" are written with one more "~")`,
      );
    }
    return userKey;
  });
  const out: Record<string, unknown> = {};
  let i = 0;
  try {
    for (; i < keys.length; i++) {
      const value = i < start ? o[keys[i]!] : decodeAny(o[keys[i]!]);
      Object.defineProperty(out, userKeys[i]!, {
        value,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
  } catch (e) {
    throw at(e, keySegment(userKeys[i] ?? ''), 'decoded');
  }
  return out;
}

function decodeTag(o: Record<string, unknown>, keys: readonly string[]): unknown {
  let hasValue = false;
  for (const key of keys) {
    if (key === 'v') hasValue = true;
    else if (key !== TAG_KEY) {
      throw new Problem(
        `is a tag object (it has a "~t" key) with the extra key ${JSON.stringify(key)}; tag objects have only "~t" and "v"`,
      );
    }
  }
  const tag = o[TAG_KEY];
  if (typeof tag !== 'string') throw new Problem(`has a "~t" tag that is ${describe(tag)}, not a string`);
  const v = hasValue ? o.v : undefined;
  const need = (): void => {
    if (!hasValue) throw new Problem(`is a ${JSON.stringify(tag)} tag without its "v" value`);
  };
  switch (tag) {
    case 'undefined':
      if (hasValue) throw new Problem('is an "undefined" tag with a "v" value, which it never has');
      return undefined;
    case 'number':
      need();
      switch (v) {
        case 'NaN':
          return NaN;
        case 'Infinity':
          return Infinity;
        case '-Infinity':
          return -Infinity;
        case '-0':
          return -0;
        default: {
          const n = typeof v === 'string' ? largeIntegralNumber(v) : undefined;
          if (n !== undefined) return n;
          throw new Problem(
            `is a "number" tag whose value ${describe(v)} is not one of "NaN", "Infinity", "-Infinity", "-0", or the exact decimal integer of a double n with 2^53 <= |n| < 1e21 (e.g. "1152921504606846976" for 2^60)`,
          );
        }
      }
    case 'Date': {
      need();
      if (typeof v === 'string' && DATE_PATTERN.test(v)) {
        const date = new Date(v);
        // The round trip admits only the canonical toISOString form, never the engine's lenient parsing.
        if (date.getTime() === date.getTime() && date.toISOString() === v) return date;
      }
      throw new Problem(
        `is a "Date" tag whose value ${describe(v)} is not a valid toISOString() timestamp (YYYY-MM-DDTHH:mm:ss.sssZ: UTC "Z", three millisecond digits, a date that exists)`,
      );
    }
    case 'BigInt':
      need();
      if (typeof v === 'string' && CANONICAL_BIGINT.test(v) && v !== '-0') return BigInt(v);
      throw new Problem(`is a "BigInt" tag whose value ${describe(v)} is not a canonical decimal integer`);
    case 'Map':
      need();
      return decodeMap(v);
    case 'Set':
      need();
      return decodeSet(v);
    case 'Uint8Array':
    case 'Buffer': {
      need();
      const bytes = typeof v === 'string' ? Buffer.from(v, 'base64') : undefined;
      // Buffer.from skips characters it does not know; the round trip rejects anything non-canonical.
      if (bytes === undefined || bytes.toString('base64') !== v) {
        throw new Problem(
          `is a ${JSON.stringify(tag)} tag whose value ${describe(v)} is not canonical base64`,
        );
      }
      return tag === 'Buffer' ? bytes : new Uint8Array(bytes);
    }
    default:
      throw new Problem(
        `has the unknown tag ${JSON.stringify(tag)}; it was written by a newer or different codec, or is corrupt`,
      );
  }
}

/**
 * The double a "number" tag's decimal stands for, when it is the exact integer of one the encoder
 * tags; else undefined. A decimal no double equals (2^53 + 1) is refused, never rounded.
 */
function largeIntegralNumber(v: string): number | undefined {
  if (!CANONICAL_BIGINT.test(v)) return undefined;
  const n = Number(v);
  const size = n < 0 ? -n : n;
  return size > Number.MAX_SAFE_INTEGER && size < EXPONENT_FROM && BigInt(n).toString() === v ? n : undefined;
}

function decodeMap(v: unknown): Map<unknown, unknown> {
  if (!Array.isArray(v))
    throw new Problem(`is a "Map" tag whose value is ${describe(v)}, not an array of entries`);
  const map = new Map<unknown, unknown>();
  let i = 0;
  let inKey = true;
  let key: unknown;
  try {
    for (; i < v.length; i++) {
      const entry: unknown = v[i];
      inKey = true;
      key = undefined;
      if (!Array.isArray(entry) || entry.length !== 2) {
        throw new Problem(
          `is ${describe(entry)}${Array.isArray(entry) ? ` of length ${entry.length}` : ''}, not a [key, value] pair`,
        );
      }
      key = decodeAny(entry[0]);
      inKey = false;
      map.set(key, decodeAny(entry[1]));
      if (map.size !== i + 1) {
        inKey = true;
        throw new Problem('repeats an earlier key; the encoder never writes duplicate Map keys');
      }
    }
  } catch (e) {
    throw at(e, inKey ? `[map key #${i}]` : mapValueSegment(key, i), 'decoded');
  }
  return map;
}

function decodeSet(v: unknown): Set<unknown> {
  if (!Array.isArray(v))
    throw new Problem(`is a "Set" tag whose value is ${describe(v)}, not an array of items`);
  const set = new Set<unknown>();
  let i = 0;
  try {
    for (; i < v.length; i++) {
      set.add(decodeAny(v[i]));
      if (set.size !== i + 1) {
        throw new Problem('repeats an earlier item; the encoder never writes duplicate Set items');
      }
    }
  } catch (e) {
    throw at(e, `[set item #${i}]`, 'decoded');
  }
  return set;
}

/**
 * Returns the value a freshly parsed tagged JSON tree stands for, or throws DecodeError naming the path
 * under `root`; it consumes `json`, reusing and mutating its objects so untagged data is never copied.
 */
export function fromTagged(json: unknown, root = 'payload', context = 'cannot decode job'): unknown {
  try {
    return decodeAny(json);
  } catch (e) {
    if (e instanceof Problem) {
      throw new DecodeError(`${context}: ${formatPath(root, e.segments)} ${e.message}`, { cause: e.cause });
    }
    throw new DecodeError(`${context}: ${root} could not be decoded (${errorMessage(e)})`, { cause: e });
  }
}
