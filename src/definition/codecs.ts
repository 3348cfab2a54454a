/** Codecs by the name a queue's config records. */
import type { Codec } from '../codec/codec.js';
import { jsonCodec } from '../codec/json.js';
import { msgpackCodec } from '../codec/msgpack.js';

/** The built-in codec recorded as `name`, or undefined for any other (protobuf, custom). */
export function builtinCodec(name: string): Codec | undefined {
  if (name === 'json') return jsonCodec;
  if (name === 'msgpack') return msgpackCodec;
  return undefined;
}

/** The codec recorded as `name`: a built-in one, else the one of `given` that declares that name. */
export function codecNamed(name: string, given: readonly Codec[]): Codec | undefined {
  return given.find((c) => c.name === name) ?? builtinCodec(name);
}
