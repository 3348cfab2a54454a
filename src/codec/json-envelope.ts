/**
 * Layout 1's json envelope (envelope format 1 of the wire format at the top of json.ts): the job's
 * id, version, creation time and trace context around its tagged payload. Read and written only by
 * `delayq migrate` (legacy-envelope.ts).
 */
import { isUtf8 } from 'node:buffer';
import { DecodeError, EncodeError } from '../errors.js';
import type { Envelope, EnvelopeCodec } from './codec.js';
import { fromTagged } from './json-decode.js';
import { toTagged } from './json-encode.js';
import { duplicateKeyError, SIXTEEN_DIGITS, unsafeIntegerLiteral } from './json-text.js';
import { checkEnvelopeFields, describe, errorMessage, validateEnvelope } from './validate.js';

function encodeEnvelope(envelope: Envelope): Buffer {
  checkEnvelopeFields(envelope, 'json');
  const { v, id, version, createdAt, traceparent } = envelope;
  const payload = toTagged(envelope.payload);
  const wire =
    traceparent === undefined
      ? { v, id, version, createdAt, payload }
      : { v, id, version, createdAt, traceparent, payload };
  let text: string;
  try {
    text = JSON.stringify(wire);
  } catch (e) {
    throw new EncodeError(
      `cannot encode job ${id}: ${errorMessage(e)}; store large data elsewhere and enqueue a reference`,
      { cause: e },
    );
  }
  return Buffer.from(text, 'utf8');
}

function decodeEnvelope(bytes: Uint8Array): Envelope {
  if (!((bytes as unknown) instanceof Uint8Array)) {
    throw new DecodeError(`cannot decode job: expected a Buffer, got ${describe(bytes)}`);
  }
  if (!isUtf8(bytes)) {
    throw new DecodeError(
      'cannot decode job: the stored bytes are not valid UTF-8, so they were not written by the json codec (is the producer configured with another codec?)',
    );
  }
  const text = Buffer.isBuffer(bytes)
    ? bytes.toString('utf8')
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new DecodeError(`cannot decode job: the stored bytes are not valid JSON (${errorMessage(e)})`, {
      cause: e,
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new DecodeError(`cannot decode job: the envelope must be a JSON object, got ${describe(parsed)}`);
  }
  const repeated = duplicateKeyError(text);
  if (repeated) throw repeated;
  const unsafe = SIXTEEN_DIGITS.test(text) ? unsafeIntegerLiteral(text) : undefined;
  if (unsafe !== undefined) {
    const id = (parsed as Record<string, unknown>).id;
    throw new DecodeError(
      `cannot decode job${typeof id === 'string' ? ` ${id}` : ''}: it holds the integer literal ${unsafe}, beyond ±(2^53 - 1), which a JavaScript number would silently round; write such integers as {"~t":"BigInt","v":"${unsafe}"}`,
    );
  }
  return validateEnvelope(parsed as Record<string, unknown>, (payload, id) =>
    fromTagged(payload, 'payload', `cannot decode job ${id}`),
  );
}

/** Layout 1's json envelope (the whole wire format at the top of json.ts), for `delayq migrate`. */
export const jsonEnvelopeCodec: EnvelopeCodec = Object.freeze({
  name: 'json',
  encode: encodeEnvelope,
  decode: decodeEnvelope,
});
