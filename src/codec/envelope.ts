/**
 * Building and reading job envelopes through the chosen codec, with the size limit enforced before
 * anything reaches Redis.
 */
import { DecodeError, EncodeError, PayloadTooLargeError, ValidationError } from '../errors.js';
import { ENVELOPE_FORMAT, type Codec, type Envelope } from './codec.js';
import { jsonCodec } from './json.js';
import { msgpackCodec } from './msgpack.js';
import { describe } from './validate.js';

/**
 * The `codec` option: a built-in codec's name ('json', the default, or 'msgpack'), or a Codec object such
 * as `protobufCodec(MySchema)` (protobuf needs the payload's message type, so it has no name) or your own.
 */
export type CodecOption = 'json' | 'msgpack' | Codec;

/** Default limit on an encoded job: 1 MiB. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

/** The codec for `option`; throws ValidationError for an unknown name or a malformed Codec. */
export function resolveCodec(option: CodecOption | undefined): Codec {
  if (option === undefined || option === 'json') return jsonCodec;
  if (option === 'msgpack') return msgpackCodec;
  if (
    typeof option === 'object' &&
    option !== null &&
    typeof option.encode === 'function' &&
    typeof option.decode === 'function'
  ) {
    return option;
  }
  throw new ValidationError(
    `codec must be 'json', 'msgpack' or an object with encode(envelope) and decode(bytes) (for protobuf: protobufCodec(YourMessageSchema)), got ${typeof option === 'string' ? JSON.stringify(option) : describe(option)}`,
  );
}

/** Encode a new job's envelope; throws EncodeError or PayloadTooLargeError and writes nothing. */
export function encodeEnvelope(
  codec: Codec,
  fields: { id: string; version: number; payload: unknown; traceparent?: string },
  maxBytes: number,
): Buffer {
  const envelope: Envelope = { v: ENVELOPE_FORMAT, createdAt: Date.now(), ...fields };
  let bytes: Buffer;
  try {
    bytes = codec.encode(envelope);
  } catch (err) {
    if (err instanceof EncodeError) throw err;
    throw new EncodeError(
      `codec '${codec.name}' cannot encode the payload of job ${fields.id}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  if (bytes.length > maxBytes) throw new PayloadTooLargeError(bytes.length, maxBytes);
  return bytes;
}

/** Decode stored bytes; any failure is a DecodeError naming the job, never a default value. */
export function decodeEnvelope(codec: Codec, bytes: Buffer, id: string): Envelope {
  try {
    const envelope = codec.decode(bytes);
    if (envelope.id !== id) {
      throw new DecodeError(
        `envelope names job ${JSON.stringify(envelope.id)}, stored as ${JSON.stringify(id)}`,
      );
    }
    return envelope;
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new DecodeError(`job ${id} could not be decoded with codec '${codec.name}': ${reason}`, {
      cause: err,
    });
  }
}
