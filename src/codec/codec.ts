/**
 * The codec contract: one encode/decode pair for a job's payload, binary-safe. The bytes are stored
 * untouched after the job record's header (docs/ARCHITECTURE.md §3.2); everything else delayq
 * knows about a job (id, version, traceparent, created at) is in the header, not in these bytes.
 */

/** Turns payloads into bytes and back. decodePayload throws DecodeError for anything malformed, never guesses. */
export interface Codec {
  readonly name: string;
  /** The bytes of `payload`; throws EncodeError naming what cannot be encoded. */
  encodePayload(payload: unknown): Buffer;
  /** The payload `bytes` stand for; throws DecodeError. `bytes` may be a view into a larger record. */
  decodePayload(bytes: Buffer): unknown;
}

/** Format tag of layout 1's envelope (`v`); layout 2 stores no envelope. */
export const ENVELOPE_FORMAT = 1;

/** Layout 1's stored job: the envelope around the payload. Read by `delayq migrate` only. */
export interface Envelope {
  /** Envelope format, always ENVELOPE_FORMAT. */
  v: number;
  id: string;
  /** The user's payload schema version (see the `version` option). */
  version: number;
  payload: unknown;
  /** Epoch ms when the job was accepted. */
  createdAt: number;
  /** W3C traceparent of the producer's active span, when there was one. */
  traceparent?: string;
}

/** Layout 1's envelope codec of a built-in codec: kept so `delayq migrate` can read old jobs. */
export interface EnvelopeCodec {
  readonly name: string;
  encode(envelope: Envelope): Buffer;
  decode(bytes: Buffer): Envelope;
}
