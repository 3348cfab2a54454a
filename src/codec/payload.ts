/**
 * Choosing the codec, and encoding and decoding job payloads through it, with the size limit
 * enforced before anything reaches Redis. The bytes are stored after the record header
 * (src/record/), untouched.
 */
import { DecodeError, EncodeError, PayloadTooLargeError, ValidationError } from '../errors.js';
import type { Codec } from './codec.js';
import { encodePayloadText, jsonCodec } from './json.js';
import { msgpackCodec } from './msgpack.js';
import { describe } from './validate.js';

/**
 * The `codec` option: a built-in codec's name ('json', the default, or 'msgpack'), or a Codec object such
 * as `protobufCodec(MySchema)` (protobuf needs the payload's message type, so it has no name) or your own.
 */
export type CodecOption = 'json' | 'msgpack' | Codec;

/** Default limit on an encoded payload: 1 MiB. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

/** The codec for `option`; throws ValidationError for an unknown name or a malformed Codec. */
export function resolveCodec(option: CodecOption | undefined): Codec {
  if (option === undefined || option === 'json') return jsonCodec;
  if (option === 'msgpack') return msgpackCodec;
  if (
    typeof option === 'object' &&
    option !== null &&
    typeof option.encodePayload === 'function' &&
    typeof option.decodePayload === 'function'
  ) {
    return option;
  }
  throw new ValidationError(
    `codec must be 'json', 'msgpack' or an object with encodePayload(payload) and decodePayload(bytes) (for protobuf: protobufCodec(YourMessageSchema)), got ${typeof option === 'string' ? JSON.stringify(option) : describe(option)}`,
  );
}

/** Encode job `id`'s payload; throws EncodeError or PayloadTooLargeError and writes nothing. */
export function encodeJobPayload(codec: Codec, id: string, payload: unknown, maxBytes: number): Buffer {
  let bytes: Buffer;
  try {
    bytes = codec.encodePayload(payload);
  } catch (err) {
    if (err instanceof EncodeError) throw err;
    throw new EncodeError(
      `codec '${codec.name}' cannot encode the payload of job ${id}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  if (!Buffer.isBuffer(bytes)) {
    throw new EncodeError(
      `codec '${codec.name}' returned ${describe(bytes)} for job ${id}; encodePayload must return a Buffer`,
    );
  }
  if (bytes.length > maxBytes) throw new PayloadTooLargeError(bytes.length, maxBytes);
  return bytes;
}

/**
 * encodeJobPayload for the json codec, as text (its UTF-8 bytes are the payload): the same checks
 * and errors, without a Buffer.
 */
export function encodeJsonJobPayload(id: string, payload: unknown, maxBytes: number): string {
  let text: string;
  try {
    text = encodePayloadText(payload);
  } catch (err) {
    if (err instanceof EncodeError) throw err;
    throw new EncodeError(
      `codec '${jsonCodec.name}' cannot encode the payload of job ${id}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  // A UTF-16 code unit is at most 3 bytes of UTF-8: counted only when that could be too many.
  if (text.length * 3 > maxBytes) {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > maxBytes) throw new PayloadTooLargeError(bytes, maxBytes);
  }
  return text;
}

/** Decode job `id`'s stored payload bytes; any failure is a DecodeError naming the job, never a default value. */
export function decodeJobPayload(codec: Codec, bytes: Buffer, id: string): unknown {
  try {
    return codec.decodePayload(bytes);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new DecodeError(`job ${id} could not be decoded with codec '${codec.name}': ${reason}`, {
      cause: err,
    });
  }
}
