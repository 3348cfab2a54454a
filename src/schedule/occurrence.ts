/**
 * The jobs of a schedule: each occurrence's id (from the schedule name and its due time alone, the
 * same string schedule-common.lua builds), and the one record every occurrence's job is stored as:
 * a new job's header (the schedule's attempts, backoff, timeout and payload version) in front of
 * the payload template's bytes. A layout-2 record holds no id, so one record serves every
 * occurrence, and the template's bytes reach the handler exactly as the producer encoded them.
 */
import type { Codec } from '../codec/codec.js';
import { DecodeError, EncodeError, PayloadTooLargeError } from '../errors.js';
import { encodeRecord, NEW_JOB_HEADER, type RecordHeader } from '../record/index.js';
import type { StoredDefinition } from './definition.js';

/** The job id of schedule `name`'s occurrence due at `due` (epoch ms). */
export function occurrenceId(name: string, due: number): string {
  return `${name}@${due}`;
}

/**
 * The payload template of schedule `name`: the payload's bytes as the queue's codec encodes them.
 * Codecs are deterministic, so an unchanged re-declaration is recognised as unchanged. Throws
 * EncodeError, or PayloadTooLargeError over `maxBytes` (the limit of every job's payload).
 */
export function encodeTemplate(codec: Codec, name: string, payload: unknown, maxBytes: number): Buffer {
  let bytes: Buffer;
  try {
    bytes = codec.encodePayload(payload);
  } catch (err) {
    if (err instanceof EncodeError) throw err;
    throw new EncodeError(
      `codec '${codec.name}' cannot encode the payload of schedule '${name}': ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  if (bytes.length > maxBytes) throw new PayloadTooLargeError(bytes.length, maxBytes);
  return bytes;
}

/** Decode a stored payload template; throws DecodeError naming the schedule when the bytes do not decode. */
export function decodeTemplate(codec: Codec, name: string, bytes: Buffer): unknown {
  try {
    return codec.decodePayload(bytes);
  } catch (err) {
    throw new DecodeError(
      `the payload of schedule '${name}' could not be decoded with codec '${codec.name}': ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

/** The record every occurrence of `definition` is added as, around the payload `template`. */
export function occurrenceRecord(definition: StoredDefinition, template: Buffer): Buffer {
  const header: RecordHeader = {
    ...NEW_JOB_HEADER,
    maxAttempts: definition.m,
    ...(definition.b !== undefined && { backoff: definition.b }),
    ...(definition.o !== undefined && { timeoutMs: definition.o }),
    version: definition.version,
  };
  return encodeRecord(header, template);
}
