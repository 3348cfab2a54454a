/**
 * The codec contract: one encode/decode pair for the whole job envelope, binary-safe.
 */

/** Format tag of the envelope layout itself (not of the user's payload schema). */
export const ENVELOPE_FORMAT = 1;

/** What is stored for each job: immutable once added. */
export interface Envelope {
  /** Envelope format, always ENVELOPE_FORMAT for envelopes this version writes. */
  v: number;
  id: string;
  /** The user's payload schema version (see the `version` option). */
  version: number;
  payload: unknown;
  /** Epoch ms, by the Redis clock, when the job was accepted. */
  createdAt: number;
  /** W3C traceparent of the producer's active span, when there was one. */
  traceparent?: string;
}

/** Turns envelopes into bytes and back. decode throws DecodeError for anything malformed, never guesses. */
export interface Codec {
  readonly name: string;
  encode(envelope: Envelope): Buffer;
  decode(bytes: Buffer): Envelope;
}
