/**
 * The two halves `delayq migrate` needs of the codec a queue records: the reader of its 0.1
 * envelopes (layout 1) and the writer of its payloads (layout 2).
 */
import type { Codec } from '../codec/codec.js';
import { DelayqError } from '../errors.js';
import type { EnvelopeReader, PayloadWriter } from './payloads.js';

/** The envelope reader and payload writer of `codec`; throws when it has not both halves. */
export function migrationCodec(codec: Codec): { envelopes: EnvelopeReader; payloads: PayloadWriter } {
  const writer = codec as Partial<PayloadWriter>;
  if (typeof writer.encodePayload !== 'function') {
    throw new DelayqError(
      'DELAYQ_CODEC_UNAVAILABLE',
      `codec '${codec.name}' cannot write layout-2 payloads (it has no encodePayload); pass the codec of this delayq version with --codec-module`,
    );
  }
  return { envelopes: codec, payloads: writer as PayloadWriter };
}
