/**
 * The one traversal the json and msgpack codecs write payloads with. It checks everything both refuse
 * (cycles, class instances, functions, symbols, symbol keys, "__proto__" keys, invalid Dates) and copies
 * only the containers on the path to a value the format cannot hold as it is, so a payload with nothing
 * special comes back as the same object. What each format writes for such a value is its WireRules.
 */
import {
  Problem,
  assertNoCycle,
  at,
  classProblem,
  functionProblem,
  keySegment,
  mapValueSegment,
  symbolProblem,
} from './validate.js';

/** What one codec writes where its format lacks a type; each returns the value as written. */
export interface WireRules {
  /** The codec (`json`) and its format (`JSON`), for messages. */
  readonly codec: string;
  readonly format: string;
  /** The kinds of values the codec keeps, for the message about a class instance. */
  readonly supported: string;
  /** How many containers deep a payload may nest; beyond, a Problem (Infinity: no limit of its own). */
  readonly maxDepth: number;
  /** A string value; the same string when it is written as it is, else throws a Problem. */
  string(s: string): string;
  /** A plain object's key as written (for example escaped); never called with "__proto__". */
  key(k: string): string;
  number(n: number): unknown;
  bigint(n: bigint): unknown;
  /** What `undefined` is written as. */
  readonly undefined: unknown;
  /** A valid Date. */
  date(d: Date): unknown;
  uint8Array(u: Uint8Array): unknown;
  buffer(b: Buffer): unknown;
  /** A Map, from its walked keys and values alternating: k1, v1, k2, v2, … */
  map(flat: unknown[]): unknown;
  /** A Set, from its walked items. */
  set(items: unknown[]): unknown;
}

/**
 * Returns the function that turns a payload into what `rules` writes, sharing unchanged subtrees with
 * it; it throws a Problem (with its path segments) for what cannot be written. One closure set per
 * codec, so each keeps its own call-site feedback.
 */
export function wireWalker(rules: WireRules): (value: unknown) => unknown {
  function walkAny(value: unknown, ancestors: object[]): unknown {
    switch (typeof value) {
      case 'string':
        return rules.string(value);
      case 'boolean':
        return value;
      case 'number':
        return rules.number(value);
      case 'object':
        return value === null ? null : walkObject(value, ancestors);
      case 'undefined':
        return rules.undefined;
      case 'bigint':
        return rules.bigint(value);
      case 'function':
        throw functionProblem(value as (...args: never[]) => unknown);
      case 'symbol':
        throw symbolProblem(value);
    }
  }

  /** A member or item: the common kinds inline, so a plain tree costs no call per leaf. */
  function walkItem(item: unknown, ancestors: object[]): unknown {
    if (typeof item === 'boolean' || item === null) return item;
    return typeof item === 'string' ? rules.string(item) : walkAny(item, ancestors);
  }

  function walkObject(o: object, ancestors: object[]): unknown {
    assertNoCycle(o, ancestors, rules.format);
    const proto: unknown = Object.getPrototypeOf(o);
    if (Array.isArray(o)) {
      if (proto !== Array.prototype) throw classProblem(o, rules.codec, rules.supported);
      return walkArray(o, enter(o, ancestors));
    }
    if (proto === Object.prototype || proto === null) {
      return walkPlain(o as Record<string, unknown>, enter(o, ancestors));
    }
    if (proto === Date.prototype) {
      const time = (o as Date).getTime();
      if (time !== time) {
        throw new Problem('is an Invalid Date; store a valid Date, or null if there is no date');
      }
      return rules.date(o as Date);
    }
    if (proto === Map.prototype) return walkMap(o as Map<unknown, unknown>, enter(o, ancestors));
    if (proto === Set.prototype) return walkSet(o as Set<unknown>, enter(o, ancestors));
    if (proto === Uint8Array.prototype) return rules.uint8Array(o as Uint8Array);
    if (proto === Buffer.prototype) return rules.buffer(o as Buffer);
    throw classProblem(o, rules.codec, rules.supported);
  }

  function enter(o: object, ancestors: object[]): object[] {
    if (ancestors.length >= rules.maxDepth) {
      throw new Problem(
        `is nested more than ${rules.maxDepth} containers deep, more than the ${rules.codec} codec reads; flatten the data`,
      );
    }
    ancestors.push(o);
    return ancestors;
  }

  function walkPlain(o: Record<string, unknown>, ancestors: object[]): unknown {
    const keys = Object.keys(o);
    for (const symbol of Object.getOwnPropertySymbols(o)) {
      if (Object.prototype.propertyIsEnumerable.call(o, symbol)) {
        throw new Problem(
          `has a symbol-keyed property (${symbol.toString()}), which cannot be stored in a job; use a string key`,
        );
      }
    }
    let out: Record<string, unknown> | undefined;
    let i = 0;
    try {
      for (; i < keys.length; i++) {
        const key = keys[i]!;
        if (key === '__proto__') {
          throw new Problem(
            'is an own property named "__proto__", which cannot be decoded safely; rename the key',
          );
        }
        const wireKey = rules.key(key);
        const item = o[key];
        const wire = walkItem(item, ancestors);
        if (out === undefined) {
          if (wire === item && wireKey === key) continue;
          // Earlier keys had nothing to change and values equal to their wire form.
          out = {};
          for (let j = 0; j < i; j++) {
            const earlier = keys[j]!;
            out[earlier] = o[earlier];
          }
        }
        // Safe plain assignment: the key is never "__proto__" (refused above, and rules.key only
        // escapes or checks).
        out[wireKey] = wire;
      }
    } catch (e) {
      throw at(e, keySegment(keys[i] ?? ''), 'read');
    }
    ancestors.pop();
    return out ?? o;
  }

  function walkArray(a: readonly unknown[], ancestors: object[]): unknown {
    const n = a.length;
    let out: unknown[] | undefined;
    let i = 0;
    try {
      for (; i < n; i++) {
        const item = a[i];
        const wire = walkItem(item, ancestors);
        if (out === undefined) {
          if (wire === item) continue;
          // Holes before i read as undefined, which each format writes as its undefined.
          out = [];
          for (let j = 0; j < i; j++) out.push(a[j]);
        }
        out.push(wire);
      }
    } catch (e) {
      throw at(e, `[${i}]`, 'read');
    }
    ancestors.pop();
    return out ?? a;
  }

  function walkMap(m: Map<unknown, unknown>, ancestors: object[]): unknown {
    const flat: unknown[] = [];
    let index = 0;
    let key: unknown;
    let inKey = true;
    try {
      for (const [k, value] of m) {
        key = k;
        inKey = true;
        const wireKey = walkAny(k, ancestors);
        inKey = false;
        flat.push(wireKey, walkAny(value, ancestors));
        index++;
      }
    } catch (e) {
      throw at(e, inKey ? `[map key #${index}]` : mapValueSegment(key, index), 'read');
    }
    ancestors.pop();
    return rules.map(flat);
  }

  function walkSet(s: Set<unknown>, ancestors: object[]): unknown {
    const items: unknown[] = [];
    try {
      for (const item of s) items.push(walkAny(item, ancestors));
    } catch (e) {
      throw at(e, `[set item #${items.length}]`, 'read');
    }
    ancestors.pop();
    return rules.set(items);
  }

  return (value) => walkAny(value, []);
}
