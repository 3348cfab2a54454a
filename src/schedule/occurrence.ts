/**
 * The jobs of a schedule: each occurrence's id (from the schedule name and its due time alone, the
 * same string schedule-common.lua builds) and its envelope, re-encoded from the schedule's
 * payload template with that id.
 */
import type { Codec, Envelope } from '../codec/codec.js';
import { ENVELOPE_FORMAT } from '../codec/codec.js';
import { decodeEnvelope, encodeEnvelope, envelopeCodecFor } from '../codec/legacy-envelope.js';
import { EncodeError } from '../errors.js';

/** The job id of schedule `name`'s occurrence due at `due` (epoch ms). */
export function occurrenceId(name: string, due: number): string {
  return `${name}@${due}`;
}

/** The envelope id the payload template is stored under. */
function templateId(name: string): string {
  return `${name}@template`;
}

/**
 * Encode the payload template of schedule `name`. createdAt is fixed, so the same payload always
 * encodes to the same bytes and an unchanged re-declaration is recognised as unchanged.
 */
export function encodeTemplate(codec: Codec, name: string, version: number, payload: unknown): Buffer {
  const envelope: Envelope = { v: ENVELOPE_FORMAT, id: templateId(name), version, payload, createdAt: 0 };
  try {
    return envelopeCodecFor(codec).encode(envelope);
  } catch (err) {
    if (err instanceof EncodeError) throw err;
    throw new EncodeError(
      `codec '${codec.name}' cannot encode the payload of schedule '${name}': ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

/** Decode a stored payload template; throws DecodeError when the bytes do not decode. */
export function decodeTemplate(codec: Codec, name: string, bytes: Buffer): Envelope {
  return decodeEnvelope(codec, bytes, templateId(name));
}

/** The envelope of one occurrence's job; throws PayloadTooLargeError over `maxBytes`. */
export function encodeOccurrence(codec: Codec, template: Envelope, id: string, maxBytes: number): Buffer {
  return encodeEnvelope(codec, { id, version: template.version, payload: template.payload }, maxBytes);
}
