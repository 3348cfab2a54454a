/**
 * From a v1 envelope (delayq 0.1) to what layout 2 stores: the payload alone, encoded by the same
 * codec, and the envelope fields that become header fields (version, createdAt, traceparent). The
 * payload goes through decode and encode, so a value comes back to the handler exactly as 0.1 would
 * have given it, or the job is buried with the reason (docs/DESIGN.md invariant 10).
 */
import type { Envelope } from '../codec/codec.js';
import { DecodeError } from '../errors.js';
import type { ConvertedPayload, PayloadConverter } from './convert.js';
import type { TemplateConverter } from './templates.js';

/** Reads layout 1's envelopes of one codec (the envelope half of a 0.1 codec). */
export interface EnvelopeReader {
  readonly name: string;
  decode(bytes: Buffer): Envelope;
}

/** Writes payloads as layout 2 stores them (a codec). */
export interface PayloadWriter {
  encodePayload(payload: unknown): Buffer;
}

/** Converts job envelopes read by `envelopes` into payloads written by `payloads`. */
export function payloadConverter(envelopes: EnvelopeReader, payloads: PayloadWriter): PayloadConverter {
  return (bytes: Buffer, id: string): ConvertedPayload => {
    const envelope = readEnvelope(envelopes, bytes, id);
    return {
      payload: payloads.encodePayload(envelope.payload),
      version: envelope.version,
      createdAt: envelope.createdAt,
      ...(envelope.traceparent === undefined ? {} : { traceparent: envelope.traceparent }),
    };
  };
}

/** Converts schedule templates (envelopes of id `<name>@template` in 0.1) the same way. */
export function templateConverter(envelopes: EnvelopeReader, payloads: PayloadWriter): TemplateConverter {
  return (bytes: Buffer, name: string) => {
    const envelope = readEnvelope(envelopes, bytes, `${name}@template`);
    return { template: payloads.encodePayload(envelope.payload), version: envelope.version };
  };
}

/** The envelope `bytes` of job `id`; a DecodeError naming the job and the codec when it is not one. */
function readEnvelope(envelopes: EnvelopeReader, bytes: Buffer, id: string): Envelope {
  let envelope: Envelope;
  try {
    envelope = envelopes.decode(bytes);
  } catch (err) {
    throw new DecodeError(
      `the v1 envelope of ${id} could not be decoded with codec '${envelopes.name}': ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  if (envelope.id !== id) {
    throw new DecodeError(`the v1 envelope stored as ${id} names ${JSON.stringify(envelope.id)}`);
  }
  return envelope;
}
