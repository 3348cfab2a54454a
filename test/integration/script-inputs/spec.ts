/**
 * What test/integration/script-inputs.test.ts knows of one script: a good call, what each argument
 * is called in its errors, the values each argument must refuse, and which keys must be refused
 * when they hold another Redis type. The per-area files next to this one build these, each seeding
 * the state its scripts need.
 */
import type { Redis } from 'ioredis';
import type { Queue } from '../../../src/index.js';

export type Arg = string | Buffer;

/** An input that is not one of the regular cases (a value left out, a bad value, a key left out). */
export interface ExtraCase {
  what: string;
  args: Arg[];
  /** What the error must match. */
  expect: RegExp;
}

/** One script's good call, what each argument is called in its errors, and values each refuses. */
export interface Spec {
  script: string;
  keys: string[];
  args: Arg[];
  /** Per ARGV index (0-based): a pattern the error for that argument matches. */
  names: RegExp[];
  /** Per ARGV index: values that must be refused. */
  bad: Arg[][];
  /** ARGV values from this index on may be left out (variadic members): not truncated there. */
  optionalFrom?: number;
  /** ARGV lengths that are a valid call (pairs of a variadic list): leaving out down to one is not a case. */
  validLengths?: number[];
  /** Other KEYS counts the script accepts (an older form): a key left out is not checked there. */
  alsoValidKeyCounts?: number[];
  /** A key more is a valid call (a list of bucket keys, the wheel's wr): not a case. */
  moreKeysValid?: boolean;
  /**
   * The Redis type the script requires of each KEYS[i], one letter per key as in
   * src/scripts/includes/args.lua check_key_types (h HASH, z ZSET, l LIST, s STRING, x STREAM, '-'
   * not checked): each key in turn is made another type, and the call must be refused naming it.
   */
  types?: string;
  extra?: ExtraCase[];
}

/** What a spec's seeding may use: the inspecting client, the server and the queue name. */
export interface SpecContext {
  raw: Redis;
  url: string;
  name: string;
  /** Queues to close after the file. */
  track: (queue: Queue) => void;
}

/** Seeds the state a script's good call needs, and returns its spec. */
export type SpecFactory = (ctx: SpecContext) => Promise<Spec>;

export const NOT_UTF8 = Buffer.from([0x61, 0xff]);
export const NUMBERS: Arg[] = ['', 'x', '-1', '1.5', '1e3', ' 1', '99999999999999999999', NOT_UTF8];
/** Values no id may be: empty, a control character, not UTF-8, longer than 1536 bytes. */
export const ID_BAD: Arg[] = ['', 'a\nb', NOT_UTF8, 'x'.repeat(1537)];
/** Values no group name may be: empty, a control character, not UTF-8, longer than 255 bytes. */
export const GROUP_BAD: Arg[] = ['', 'a\nb', NOT_UTF8, 'x'.repeat(256)];
/** Values no events cap may be. */
export const CAP_BAD: Arg[] = ['', 'x', '1.5', NOT_UTF8];
