/**
 * The two halves `delayq migrate` needs of the codec a queue records: the reader of its 0.1
 * envelopes (layout 1) and the writer of its payloads (layout 2).
 */
import type { Codec } from '../codec/codec.js';
import { envelopeCodecFor } from '../codec/legacy-envelope.js';
import type { EnvelopeReader, PayloadWriter } from './payloads.js';

/**
 * The envelope reader and payload writer of `codec`; throws DecodeError for a codec without a
 * layout-1 envelope reader (a custom codec: migrate its queue with the delayq version that wrote it).
 */
export function migrationCodec(codec: Codec): { envelopes: EnvelopeReader; payloads: PayloadWriter } {
  return { envelopes: envelopeCodecFor(codec), payloads: codec };
}
