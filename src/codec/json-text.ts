/**
 * Checks of JSON text that JSON.parse has accepted but the tagged JSON format refuses (the wire
 * format at the top of json.ts): an object that repeats a key (JSON.parse keeps the last one
 * silently) and an integer literal beyond ±(2^53 - 1) (a number would round it silently).
 */
import { DecodeError } from '../errors.js';

/** The refusal of a payload in which one object repeats a key (JSON.parse keeps the last silently). */
export function duplicateKeyError(text: string): DecodeError | undefined {
  const key = duplicateKey(text);
  return key === undefined
    ? undefined
    : new DecodeError(
        `cannot decode job: an object of the payload repeats the key ${JSON.stringify(key)}; JSON.parse would keep the last one silently, and the encoder never writes a key twice`,
      );
}

/**
 * The first key that one object of `text` (JSON that JSON.parse accepted) holds twice, or
 * undefined. Strings are skipped with indexOf; a key with escapes is compared by its value, so
 * "a" and "\u0061" are one key.
 */
export function duplicateKey(text: string): string | undefined {
  // Two members need two colons; most small payloads stop here.
  const firstColon = text.indexOf(':');
  if (firstColon < 0 || text.indexOf(':', firstColon + 1) < 0) return undefined;
  try {
    return findDuplicateKey(text);
  } finally {
    // The scratch lists let go of the keys and sets they held, and of their room when a payload
    // grew them past SCRATCH_KEEP.
    const { keys, starts, bigs } = SCRATCH;
    if (keys.length > SCRATCH_KEEP) SCRATCH.keys = [];
    else keys.fill(undefined, 0, SCRATCH.keysUsed);
    if (starts.length > SCRATCH_KEEP) SCRATCH.starts = [];
    if (bigs.length > SCRATCH_KEEP) SCRATCH.bigs = [];
    else bigs.fill(undefined, 0, SCRATCH.depthUsed);
    SCRATCH.keysUsed = 0;
    SCRATCH.depthUsed = 0;
  }
}

/**
 * duplicateKey's lists, kept from one call to the next and filled by index: made at each call,
 * the three lists' first push cost ~500 bytes per decoded job. A call never runs inside another.
 */
const SCRATCH: {
  keys: Array<string | undefined>;
  starts: number[];
  bigs: Array<Set<string> | undefined>;
  /** How far this call filled keys and bigs: what the end of duplicateKey clears. */
  keysUsed: number;
  depthUsed: number;
} = { keys: [], starts: [], bigs: [], keysUsed: 0, depthUsed: 0 };
/** Lists longer than this (a payload of many keys or deep nesting) are not kept. */
const SCRATCH_KEEP = 1024;

function findDuplicateKey(text: string): string | undefined {
  // The keys of every open object, one flat list: each open container has its start in it (-1:
  // an array). A key is looked for among its object's keys by a linear search while they are
  // few, through a Set past MANY_KEYS; no allocation per object in the usual case. `keyCount`,
  // `depth`: the lists' lengths in use (their slots past those hold leftovers).
  const { keys, starts, bigs } = SCRATCH;
  let keyCount = 0;
  let depth = 0;
  let from = -1;
  let big: Set<string> | undefined;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        let back = end - 1;
        while (text.charCodeAt(back) === 0x5c) back--;
        if ((end - 1 - back) % 2 === 0) break;
      }
      if (from >= 0) {
        let next = end + 1;
        while (next < n && text.charCodeAt(next) <= 0x20) next++;
        if (text.charCodeAt(next) === 0x3a) {
          const raw = text.slice(i + 1, end);
          const key = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
          if (big !== undefined) {
            if (big.has(key)) return key;
            big.add(key);
          } else {
            for (let k = from; k < keyCount; k++) if (keys[k] === key) return key;
            if (keyCount - from >= MANY_KEYS) big = new Set(keys.slice(from, keyCount) as string[]);
          }
          keys[keyCount++] = key;
          if (keyCount > SCRATCH.keysUsed) SCRATCH.keysUsed = keyCount;
        }
      }
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      starts[depth] = from;
      bigs[depth] = big;
      depth++;
      if (depth > SCRATCH.depthUsed) SCRATCH.depthUsed = depth;
      from = c === 0x7b ? keyCount : -1;
      big = undefined;
    } else if (c === 0x7d || c === 0x5d) {
      if (from >= 0) keyCount = from;
      if (depth > 0) {
        depth--;
        from = starts[depth]!;
        big = bigs[depth];
      } else {
        from = -1;
        big = undefined;
      }
    }
  }
  return undefined;
}

/** Past this many keys in one object, duplicateKey looks keys up in a Set rather than a list. */
const MANY_KEYS = 16;

/** 2^53 - 1 has 16 digits: without a run of 16 digits no integer literal can be out of range. */
export const SIXTEEN_DIGITS = /\d{16}/;
const NUMBER_TOKEN = /-?\d+(\.\d+)?([eE][+-]?\d+)?/y;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The first integer literal (a number token with neither fraction nor exponent) outside ±(2^53 - 1) in
 * `text`, which JSON.parse has already accepted; strings are skipped, so digits inside them never count.
 */
export function unsafeIntegerLiteral(text: string): string | undefined {
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string: a backslash escapes the next character, so \" does not end it.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      NUMBER_TOKEN.lastIndex = i;
      const match = NUMBER_TOKEN.exec(text);
      if (match === null) continue;
      const token = match[0];
      if (match[1] === undefined && match[2] === undefined) {
        const size = BigInt(token);
        if (size > MAX_SAFE || -size > MAX_SAFE) return token;
      }
      i += token.length - 1;
    }
  }
  return undefined;
}
