/**
 * Envelope checks shared by the built-in codecs, so that json, msgpack and protobuf accept and refuse the
 * same envelopes, with the same messages. Only the payload and the outer framing are codec-specific.
 */
import { DecodeError, EncodeError } from '../errors.js';
import { ENVELOPE_FORMAT, type Envelope } from './codec.js';

/** Names a value for an error message: `the string "abc"`, `number 3`, `an array`, `null`. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${typeof value} ${String(value)}`;
    case 'undefined':
      return 'undefined';
    case 'object':
      return 'an object';
    default:
      return `a ${typeof value}`;
  }
}

/**
 * Throws EncodeError unless every envelope field but the payload is one `codec` can write: v is
 * ENVELOPE_FORMAT, id a string, version an integer >= 1, createdAt a finite number, traceparent a string
 * when present.
 */
export function checkEnvelopeFields(envelope: Envelope, codec: string): void {
  const { v, id, version, createdAt, traceparent } = envelope;
  if (v !== ENVELOPE_FORMAT) {
    throw new EncodeError(
      `cannot encode job: envelope.v is ${String(v)} but the ${codec} codec writes format ${ENVELOPE_FORMAT}; set v to ENVELOPE_FORMAT`,
    );
  }
  if (typeof id !== 'string') {
    throw new EncodeError(`cannot encode job: envelope.id must be a string, got ${describe(id)}`);
  }
  if (!Number.isInteger(version) || version < 1) {
    throw new EncodeError(
      `cannot encode job ${id}: envelope.version must be an integer >= 1, got ${describe(version)}`,
    );
  }
  // Whole ms, as every codec reads it back: a fraction would be dropped by protobuf and refused by readers.
  if (!Number.isSafeInteger(createdAt)) {
    throw new EncodeError(
      `cannot encode job ${id}: envelope.createdAt must be a whole number of epoch ms within ±(2^53 - 1), got ${describe(createdAt)}`,
    );
  }
  if (traceparent !== undefined && typeof traceparent !== 'string') {
    throw new EncodeError(
      `cannot encode job ${id}: envelope.traceparent must be a string when present, got ${describe(traceparent)}`,
    );
  }
}

function own(o: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(o, key) ? o[key] : undefined;
}

/**
 * Returns the Envelope a freshly decoded envelope record stands for, with its payload turned into the
 * caller's value by `decodePayload(wirePayload, id)`; throws DecodeError naming the first problem. The
 * record must have exactly the keys v, id, version, createdAt, payload and optionally traceparent; an
 * unknown key means a newer or different writer, and an own "__proto__" key is refused outright. Only own
 * properties are read, so nothing on a prototype can stand in for a missing field.
 */
export function validateEnvelope(
  o: Record<string, unknown>,
  decodePayload: (wire: unknown, id: string) => unknown,
): Envelope {
  for (const key of Object.keys(o)) {
    switch (key) {
      case 'v':
      case 'id':
      case 'version':
      case 'createdAt':
      case 'traceparent':
      case 'payload':
        break;
      case '__proto__':
        throw new DecodeError(
          'cannot decode job: the envelope has an own "__proto__" key, which the encoder never writes; refusing it keeps prototypes safe',
        );
      default:
        throw new DecodeError(
          `cannot decode job: the envelope has the unknown field ${JSON.stringify(key)}; it was written by a newer or different codec`,
        );
    }
  }
  const v = own(o, 'v');
  if (typeof v !== 'number') {
    throw new DecodeError(`cannot decode job: envelope.v must be a number, got ${describe(v)}`);
  }
  if (v !== ENVELOPE_FORMAT) {
    throw new DecodeError(
      `cannot decode job: envelope format ${v} is not supported (this delayq reads format ${ENVELOPE_FORMAT}); upgrade this worker if a newer delayq wrote it`,
    );
  }
  const id = own(o, 'id');
  if (typeof id !== 'string') {
    throw new DecodeError(`cannot decode job: envelope.id must be a string, got ${describe(id)}`);
  }
  const version = own(o, 'version');
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new DecodeError(
      `cannot decode job ${id}: envelope.version must be an integer >= 1, got ${describe(version)}`,
    );
  }
  const createdAt = own(o, 'createdAt');
  if (typeof createdAt !== 'number' || !Number.isSafeInteger(createdAt)) {
    throw new DecodeError(
      `cannot decode job ${id}: envelope.createdAt must be a whole number of epoch ms within ±(2^53 - 1), got ${describe(createdAt)}`,
    );
  }
  const traceparent = own(o, 'traceparent');
  if (traceparent !== undefined && typeof traceparent !== 'string') {
    throw new DecodeError(
      `cannot decode job ${id}: envelope.traceparent must be a string when present, got ${describe(traceparent)}`,
    );
  }
  if (!Object.hasOwn(o, 'payload')) {
    throw new DecodeError(`cannot decode job ${id}: the envelope has no payload field`);
  }
  const payload = decodePayload(o.payload, id);
  return traceparent === undefined
    ? { v, id, version, payload, createdAt }
    : { v, id, version, payload, createdAt, traceparent };
}

// ---------------------------------------------------------------------------------------------------------
// Payload paths in error messages, for the msgpack and protobuf codecs: segments are collected while a
// recursive walk unwinds, so the happy path never builds path strings.

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A refusal found deep in a payload; `segments` name where, innermost first. */
export class Problem extends Error {
  readonly segments: string[] = [];
  constructor(
    problem: string,
    cause?: unknown,
    /** For cycles: how many leading segments name the container that is referred back to. */
    readonly refersToDepth?: number,
  ) {
    super(problem, { cause });
  }
}

/** A function in a payload: data only, with a hint at what to pass instead. */
export function functionProblem(value: (...args: never[]) => unknown): Problem {
  return new Problem(
    `is a function${value.name === '' ? '' : ` (${value.name})`}; functions cannot be stored in a job, so pass data instead (for example the name of the function for the handler to look up)`,
  );
}

/** A symbol in a payload. */
export function symbolProblem(value: symbol): Problem {
  return new Problem(
    `is a symbol (${value.toString()}); symbols cannot be stored in a job, use a string instead`,
  );
}

/** Throws a Problem when `o` is one of its own `ancestors` (a cycle), which `format` cannot represent. */
export function assertNoCycle(o: object, ancestors: readonly object[], format: string): void {
  for (let i = 0; i < ancestors.length; i++) {
    if (ancestors[i] === o) {
      throw new Problem(
        `${format} cannot represent cycles, so break it, for example by storing an id instead of the back-reference`,
        undefined,
        i,
      );
    }
  }
}

/** A class instance the codec `codec` would lose the type of; `supported` lists what it keeps. */
export function classProblem(o: object, codec: string, supported: string): Problem {
  return new Problem(
    `is an instance of ${className(o)}, which the ${codec} codec cannot store without losing its type; convert it to plain data first (supported: ${supported})`,
  );
}

/** The path segment of an object key: `.name`, or `["odd key"]` when it is not an identifier. */
export function keySegment(key: string): string {
  return IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** The path segment of a Map value: `.get("key")` for primitive keys, else its position. */
export function mapValueSegment(key: unknown, index: number): string {
  switch (typeof key) {
    case 'string':
      return `.get(${JSON.stringify(key)})`;
    case 'number':
    case 'boolean':
      return `.get(${String(key)})`;
    case 'bigint':
      return `.get(${key}n)`;
    default:
      return key === null || key === undefined ? `.get(${String(key)})` : `[map value #${index}]`;
  }
}

/** `root` followed by the outermost `count` segments. */
export function formatPath(root: string, segments: readonly string[], count = segments.length): string {
  let path = root;
  // Segments were pushed innermost first.
  for (let i = segments.length - 1; i >= segments.length - count; i--) path += segments[i];
  return path;
}

/** The message of anything thrown. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Attaches one path segment to a refusal on its way up. A foreign error (a throwing getter, say) becomes a
 * Problem at the innermost level that sees it; RangeError passes through untouched because near the stack
 * limit even building a Problem can overflow, and the caller reports it as "too deep" instead.
 */
export function at(e: unknown, segment: string, verb: string): unknown {
  if (e instanceof Problem) {
    e.segments.push(segment);
    return e;
  }
  if (e instanceof RangeError) return e;
  const p = new Problem(`could not be ${verb}: ${errorMessage(e)}`, e);
  p.segments.push(segment);
  return p;
}

/** The name of an object's class for a message, without trusting the object. */
export function className(value: object): string {
  try {
    const proto: unknown = Object.getPrototypeOf(value);
    const ctor: unknown =
      proto === null || typeof proto !== 'object' ? undefined : Reflect.get(proto, 'constructor');
    if (typeof ctor === 'function' && ctor.name !== '') return ctor.name;
  } catch {
    // A hostile proxy: the generic wording is still accurate.
  }
  return 'a class';
}

/** Whether a string has no lone UTF-16 surrogate, so UTF-8 can carry it unchanged. */
export function isWellFormed(s: string): boolean {
  // Node 20 has String.prototype.isWellFormed; the ES2023 lib typings do not know it yet.
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** Names the first lone surrogate of a string that is not well formed: `a lone UTF-16 surrogate (\ud800 at index 3)`. */
export function describeLoneSurrogate(s: string): string {
  let i = 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
        continue;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) break;
  }
  return `a lone UTF-16 surrogate (\\u${s.charCodeAt(i).toString(16)} at index ${i})`;
}
