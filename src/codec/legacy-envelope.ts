/**
 * Layout 1's job envelope (`{v, id, version, createdAt, traceparent?, payload}` through a codec),
 * which layout 2 no longer stores: kept so `delayq migrate` can read the jobs of a format-1 queue.
 * Nothing on the hot path uses it.
 */
import { DecodeError, EncodeError, PayloadTooLargeError } from '../errors.js';
import { ENVELOPE_FORMAT, type Codec, type Envelope, type EnvelopeCodec } from './codec.js';
import { jsonEnvelopeCodec } from './json-envelope.js';
import { jsonCodec } from './json.js';
import { msgpackCodec, msgpackEnvelopeCodec } from './msgpack.js';

/**
 * The envelope codec of `codec`: the built-in ones have one (protobuf through its `envelope`);
 * a custom codec has none, and migrating its queue needs the old version of delayq.
 */
export function envelopeCodecFor(codec: Codec): EnvelopeCodec {
  if (codec === jsonCodec) return jsonEnvelopeCodec;
  if (codec === msgpackCodec) return msgpackEnvelopeCodec;
  const own = (codec as { envelope?: EnvelopeCodec }).envelope;
  if (own !== undefined && typeof own.decode === 'function' && typeof own.encode === 'function') return own;
  throw new DecodeError(
    `codec '${codec.name}' has no layout-1 envelope reader (only json, msgpack and protobufCodec do); migrate this queue with the delayq version that wrote it`,
  );
}

/** Encode a layout-1 envelope (tests and migrate fixtures write old jobs with it). */
export function encodeEnvelope(
  codec: Codec,
  fields: { id: string; version: number; payload: unknown; traceparent?: string; createdAt?: number },
  maxBytes = Number.POSITIVE_INFINITY,
): Buffer {
  const envelope: Envelope = { v: ENVELOPE_FORMAT, createdAt: Date.now(), ...fields };
  let bytes: Buffer;
  try {
    bytes = envelopeCodecFor(codec).encode(envelope);
  } catch (err) {
    if (err instanceof EncodeError) throw err;
    throw new EncodeError(`cannot encode the envelope of job ${fields.id}: ${String(err)}`, { cause: err });
  }
  if (bytes.length > maxBytes) throw new PayloadTooLargeError(bytes.length, maxBytes);
  return bytes;
}

/** Decode a stored layout-1 envelope; any failure is a DecodeError naming the job. */
export function decodeEnvelope(codec: Codec, bytes: Buffer, id: string): Envelope {
  try {
    const envelope = envelopeCodecFor(codec).decode(bytes);
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
