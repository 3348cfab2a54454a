/**
 * The protobuf codec: the job envelope as the fixed message `delayq.v1.Envelope` (src/codec/envelope.proto),
 * whose payload field holds one serialized message of the queue's own generated type:
 *
 *   const queue = new Queue<Email>('emails', { codec: protobufCodec(EmailSchema) });
 *
 * WIRE FORMAT (envelope format 1): a serialized delayq.v1.Envelope, proto3, fields
 *
 *   1 v            uint32  (varint)            must be 1
 *   2 id           string  (length-delimited)  the job id; omitted when empty, as proto3 does
 *   3 version      uint32  (varint)            payload schema version, >= 1
 *   4 created_at   int64   (varint)            epoch ms; omitted when 0; within ±(2^53 - 1)
 *   5 traceparent  string  (length-delimited)  only when the job has one
 *   6 payload      bytes   (length-delimited)  always present, even when the message serializes to nothing
 *
 * written in field-number order, so the bytes equal what generated code for envelope.proto writes. Reading is
 * stricter than plain protobuf, because a new field means a new `v` (as with the json codec): an unknown
 * field number, a wrong wire type, a field given twice, a missing payload, invalid UTF-8 or a value out of
 * range makes the bytes undecodable. The payload itself follows the user's schema with ordinary protobuf
 * rules (unknown fields are kept, so a payload written by a newer schema survives an older worker).
 *
 * The envelope is read and written with BinaryReader/BinaryWriter rather than code generated from
 * envelope.proto: generated code's fromBinary keeps unknown fields and lets a repeated field win silently
 * where this reader refuses both and names the byte, and shipping generated code would add a generated file,
 * its descriptor and a build step to the package for six fields. The test suite checks these bytes against
 * the generated code (test/fixtures/proto/gen/envelope_pb.ts) instead.
 *
 * Encoding refuses, with the path of the field, what protobuf-es would otherwise write silently changed: a
 * payload that is not a message of the schema, a field value of the wrong type (a number in a string field
 * is written as its digits, undefined as the text "undefined"), a string with a lone surrogate (UTF-8 cannot
 * carry it), and messages nested deeper than PROTOBUF_MAX_DEPTH, which protobuf-es refuses to read.
 */
import { isUtf8 } from 'node:buffer';
import {
  ScalarType,
  fromBinary,
  isMessage,
  toBinary,
  type DescField,
  type DescMessage,
  type MessageShape,
} from '@bufbuild/protobuf';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { FeatureSet_FieldPresence, isWrapperDesc } from '@bufbuild/protobuf/wkt';
import { DecodeError, EncodeError, ValidationError } from '../errors.js';
import type { Codec, Envelope, EnvelopeCodec } from './codec.js';
import {
  Problem,
  at,
  checkEnvelopeFields,
  className,
  describe,
  describeLoneSurrogate,
  errorMessage,
  formatPath,
  isWellFormed,
  keySegment,
  validateEnvelope,
} from './validate.js';

/** Field numbers of delayq.v1.Envelope (src/codec/envelope.proto). */
export const PROTOBUF_ENVELOPE_FIELDS = Object.freeze({
  v: 1,
  id: 2,
  version: 3,
  createdAt: 4,
  traceparent: 5,
  payload: 6,
});

/** How many messages deep a payload may nest, the payload message itself counting as 1: protobuf-es reads no deeper. */
export const PROTOBUF_MAX_DEPTH = 100;

/** A protobuf codec for one payload message type; `schema` is the generated descriptor it was made with. */
export interface ProtobufCodec<Desc extends DescMessage = DescMessage> extends Codec {
  /** Layout 1's delayq.v1.Envelope around messages of this schema, for `delayq migrate`. */
  readonly envelope: EnvelopeCodec;
  readonly name: 'protobuf';
  readonly schema: Desc;
}

const F = PROTOBUF_ENVELOPE_FIELDS;
const WIRE_TYPES: readonly (WireType | undefined)[] = [
  undefined,
  WireType.Varint,
  WireType.LengthDelimited,
  WireType.Varint,
  WireType.Varint,
  WireType.LengthDelimited,
  WireType.LengthDelimited,
];
const FIELD_NAMES = ['', 'v', 'id', 'version', 'created_at', 'traceparent', 'payload'];
const UINT32_MAX = 0xffffffff;
const INT32_MIN = -0x80000000;
const INT32_MAX = 0x7fffffff;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const DECIMAL = /^-?(?:0|[1-9]\d*)$/;
/** A proto3 field without `optional`: never undefined in a message. */
const IMPLICIT = FeatureSet_FieldPresence.IMPLICIT;

// ---------------------------------------------------------------------------------------------------------
// Checking a payload message before toBinary, which trusts its input.

function checkMessage(desc: DescMessage, value: unknown, depth: number): void {
  if (!isMessage(value, desc)) {
    const got =
      typeof value === 'object' && value !== null && typeof Reflect.get(value, '$typeName') === 'string'
        ? `a ${String(Reflect.get(value, '$typeName'))} message`
        : typeof value === 'object' && value !== null && !Array.isArray(value)
          ? `${Object.getPrototypeOf(value) === Object.prototype ? 'a plain object' : `an instance of ${className(value)}`} without "$typeName"`
          : describe(value);
    throw new Problem(
      `is ${got}, not a ${desc.typeName} message; build it with create(${desc.name}Schema, { ... }) from @bufbuild/protobuf`,
    );
  }
  if (depth > PROTOBUF_MAX_DEPTH) {
    throw new Problem(
      `is nested ${depth} messages deep; protobuf-es reads at most ${PROTOBUF_MAX_DEPTH}, so the job could not be decoded`,
    );
  }
  const message = value as unknown as Record<string, unknown>;
  for (const member of desc.members) {
    if (member.kind === 'field') {
      try {
        checkField(member, message[member.localName], depth);
      } catch (e) {
        throw at(e, keySegment(member.localName), 'read');
      }
      continue;
    }
    const selected = message[member.localName];
    try {
      if (typeof selected !== 'object' || selected === null) {
        throw new Problem(`is ${describe(selected)}, not a oneof selection { case, value }`);
      }
      const selectedCase: unknown = Reflect.get(selected, 'case');
      if (selectedCase === undefined) continue;
      const field = member.fields.find((f) => f.localName === selectedCase);
      if (field === undefined) {
        throw new Problem(
          `has the case ${describe(selectedCase)}, which is not one of ${member.fields.map((f) => JSON.stringify(f.localName)).join(', ')}`,
        );
      }
      try {
        checkField(field, Reflect.get(selected, 'value'), depth);
      } catch (e) {
        throw at(e, '.value', 'read');
      }
    } catch (e) {
      throw at(e, keySegment(member.localName), 'read');
    }
  }
}

function checkField(field: DescField, value: unknown, depth: number): void {
  switch (field.fieldKind) {
    case 'scalar':
      if (value === undefined && field.presence !== IMPLICIT) return;
      return checkScalar(field.scalar, field.longAsString, value);
    case 'enum':
      if (value === undefined && field.presence !== IMPLICIT) return;
      return checkEnum(value);
    case 'message':
      if (value === undefined) return;
      if (isWrapperDesc(field.message)) {
        // Singular wrapper fields (google.protobuf.Int32Value, ...) hold the unboxed value.
        const inner = field.message.fields[0];
        return checkScalar(inner.scalar, inner.longAsString, value);
      }
      return checkMessage(field.message, value, depth + 1);
    case 'list': {
      if (!Array.isArray(value)) throw new Problem(`is ${describe(value)}, not an array (a repeated field)`);
      for (let i = 0; i < value.length; i++) {
        try {
          const item: unknown = value[i];
          if (field.listKind === 'scalar') checkScalar(field.scalar, field.longAsString, item);
          else if (field.listKind === 'enum') checkEnum(item);
          else checkMessage(field.message, item, depth + 1);
        } catch (e) {
          throw at(e, `[${i}]`, 'read');
        }
      }
      return;
    }
    case 'map': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new Problem(`is ${describe(value)}, not an object (a map field)`);
      }
      const entries = value as Record<string, unknown>;
      for (const key of Object.keys(entries)) {
        try {
          checkMapKey(field.mapKey, key);
          const item = entries[key];
          if (field.mapKind === 'scalar') checkScalar(field.scalar, false, item);
          else if (field.mapKind === 'enum') checkEnum(item);
          else checkMessage(field.message, item, depth + 1);
        } catch (e) {
          throw at(e, keySegment(key), 'read');
        }
      }
      return;
    }
  }
}

function checkEnum(value: unknown): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < INT32_MIN || value > INT32_MAX) {
    throw new Problem(`is ${describe(value)}, not an enum value (an int32)`);
  }
}

function wrongType(value: unknown, expected: string): Problem {
  return new Problem(`is ${describe(value)}, but the field is ${expected}`);
}

function checkScalar(type: ScalarType, longAsString: boolean, value: unknown): void {
  switch (type) {
    case ScalarType.STRING:
      if (typeof value !== 'string') throw wrongType(value, 'a string');
      if (!isWellFormed(value)) {
        throw new Problem(
          `is a string with ${describeLoneSurrogate(value)}, which protobuf strings (UTF-8) cannot carry; fix the text, or use a bytes field`,
        );
      }
      return;
    case ScalarType.BOOL:
      if (typeof value !== 'boolean') throw wrongType(value, 'a bool');
      return;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      if (typeof value !== 'number')
        throw wrongType(value, type === ScalarType.FLOAT ? 'a float' : 'a double');
      return;
    case ScalarType.BYTES:
      if (!(value instanceof Uint8Array)) throw wrongType(value, 'bytes (a Uint8Array)');
      return;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      if (typeof value !== 'number' || !Number.isInteger(value) || value < INT32_MIN || value > INT32_MAX) {
        throw wrongType(value, 'an int32 (an integer number)');
      }
      return;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > UINT32_MAX) {
        throw wrongType(value, 'a uint32 (a non-negative integer number)');
      }
      return;
    default: {
      // The 64-bit integers: a bigint, or a decimal string for fields with jstype = JS_STRING.
      const unsigned = type === ScalarType.UINT64 || type === ScalarType.FIXED64;
      const expected = `a${unsigned ? ' u' : 'n '}int64 (${longAsString ? 'a decimal string' : 'a bigint'})`;
      let n: bigint;
      if (longAsString) {
        if (typeof value !== 'string' || !DECIMAL.test(value)) throw wrongType(value, expected);
        n = BigInt(value);
      } else {
        if (typeof value !== 'bigint') throw wrongType(value, expected);
        n = value;
      }
      if (unsigned ? n < 0n || n > UINT64_MAX : n < INT64_MIN || n > INT64_MAX) {
        throw new Problem(`is ${describe(value)}, out of range for ${expected}`);
      }
    }
  }
}

function checkMapKey(type: ScalarType, key: string): void {
  switch (type) {
    case ScalarType.STRING:
      if (!isWellFormed(key)) {
        throw new Problem(`is a map key with ${describeLoneSurrogate(key)}, which UTF-8 cannot carry`);
      }
      return;
    case ScalarType.BOOL:
      if (key !== 'true' && key !== 'false')
        throw new Problem('is a bool map key other than "true" or "false"');
      return;
    default:
      // Integer keys: the object key is the decimal form, which toBinary converts back.
      if (!DECIMAL.test(key)) throw new Problem('is an integer map key that is not a decimal integer');
  }
}

// ---------------------------------------------------------------------------------------------------------
// The envelope.

/** The serialized payload message, checked against `schema` first; `job` names it in errors. */
function encodePayloadWith(schema: DescMessage, payload: unknown, job = ''): Uint8Array {
  try {
    checkMessage(schema, payload, 1);
  } catch (e) {
    if (e instanceof Problem) {
      throw new EncodeError(`cannot encode job${job}: ${formatPath('payload', e.segments)} ${e.message}`, {
        cause: e.cause,
      });
    }
    throw new EncodeError(
      `cannot encode job${job}: payload could not be checked (${errorMessage(e)}), most likely because it is nested too deeply`,
      { cause: e },
    );
  }
  try {
    return toBinary(schema, payload as MessageShape<DescMessage>);
  } catch (e) {
    throw new EncodeError(
      `cannot encode job${job}: protobuf-es could not write the payload (${errorMessage(e)})`,
      {
        cause: e,
      },
    );
  }
}

/** The payload message of `bytes`, a copy (bytes fields are the job's own, not views of the record). */
function decodePayloadWith(schema: DescMessage, bytes: Uint8Array, job = ''): unknown {
  if (!((bytes as unknown) instanceof Uint8Array)) {
    throw new DecodeError(`cannot decode job: expected a Buffer, got ${describe(bytes)}`);
  }
  try {
    return fromBinary(schema, new Uint8Array(bytes));
  } catch (e) {
    throw new DecodeError(
      `cannot decode job${job}: payload is not a valid ${schema.typeName} message (${errorMessage(e)}); was it written with another schema?`,
      { cause: e },
    );
  }
}

function encodeWith(schema: DescMessage, envelope: Envelope): Buffer {
  checkEnvelopeFields(envelope, 'protobuf');
  const { v, id, version, createdAt, traceparent, payload } = envelope;
  if (version > UINT32_MAX) {
    throw new EncodeError(
      `cannot encode job ${id}: envelope.version must fit a uint32 for the protobuf codec, got ${version}`,
    );
  }
  // createdAt is a safe integer (checkEnvelopeFields), so it fits the int64 field.
  for (const [field, text] of [
    ['id', id],
    ['traceparent', traceparent],
  ] as const) {
    if (text !== undefined && !isWellFormed(text)) {
      throw new EncodeError(
        `cannot encode job ${id}: envelope.${field} is a string with ${describeLoneSurrogate(text)}, which protobuf strings (UTF-8) cannot carry`,
      );
    }
  }
  const body = encodePayloadWith(schema, payload, ` ${id}`);
  const writer = new BinaryWriter();
  writer.tag(F.v, WireType.Varint).uint32(v);
  if (id !== '') writer.tag(F.id, WireType.LengthDelimited).string(id);
  writer.tag(F.version, WireType.Varint).uint32(version);
  // Zero (and -0) is omitted, as proto3 omits every zero value.
  if (createdAt !== 0) writer.tag(F.createdAt, WireType.Varint).int64(createdAt);
  if (traceparent !== undefined) writer.tag(F.traceparent, WireType.LengthDelimited).string(traceparent);
  // The payload is copied once, straight after its tag and length, rather than into the writer and out again.
  const head = writer.tag(F.payload, WireType.LengthDelimited).uint32(body.length).finish();
  const bytes = Buffer.allocUnsafe(head.length + body.length);
  bytes.set(head);
  bytes.set(body, head.length);
  return bytes;
}

/** Reads a uint32 field strictly: a varint beyond 32 bits is refused rather than truncated. */
function readUint32(reader: BinaryReader, no: number): number {
  const n = BigInt(reader.uint64());
  if (n > BigInt(UINT32_MAX))
    throw new Problem(`field ${no} (${FIELD_NAMES[no]}) is ${n}, beyond the uint32 range`);
  return Number(n);
}

/** Reads a string field, refusing invalid UTF-8 rather than replacing it. */
function readString(reader: BinaryReader, no: number): string {
  const bytes = reader.bytes();
  if (!isUtf8(bytes)) throw new Problem(`field ${no} (${FIELD_NAMES[no]}) is not valid UTF-8`);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

function readEnvelopeFields(bytes: Uint8Array): Record<string, unknown> {
  const reader = new BinaryReader(bytes);
  const fields: Record<string, unknown> = {};
  let seen = 0;
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const [no, wireType] = reader.tag();
    const expected = WIRE_TYPES[no];
    if (expected === undefined) {
      throw new Problem(
        `the envelope has the unknown field number ${no} (at byte ${start}); it was written by a newer or different codec`,
      );
    }
    const name = FIELD_NAMES[no]!;
    if (wireType !== expected) {
      throw new Problem(
        `field ${no} (${name}) has wire type ${wireType}, expected ${expected} (at byte ${start})`,
      );
    }
    if ((seen & (1 << no)) !== 0) {
      throw new Problem(
        `field ${no} (${name}) occurs twice (at byte ${start}); the encoder writes each field once`,
      );
    }
    seen |= 1 << no;
    switch (no) {
      case F.v:
        fields.v = readUint32(reader, no);
        break;
      case F.id:
        fields.id = readString(reader, no);
        break;
      case F.version:
        fields.version = readUint32(reader, no);
        break;
      case F.createdAt: {
        const n = BigInt(reader.int64());
        if (n > MAX_SAFE || n < -MAX_SAFE) {
          throw new Problem(
            `field 4 (created_at) is ${n}, beyond ±(2^53 - 1) ms, so it is no time a Date can hold`,
          );
        }
        fields.createdAt = Number(n);
        break;
      }
      case F.traceparent:
        fields.traceparent = readString(reader, no);
        break;
      default:
        // F.payload: the wire type check above leaves no other field number.
        fields.payload = reader.bytes();
    }
  }
  // proto3 omits zero values; v and version are never zero, so a missing one is caught by the checks after.
  fields.v ??= 0;
  fields.id ??= '';
  fields.version ??= 0;
  fields.createdAt ??= 0;
  return fields;
}

function decodeWith<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array): Envelope {
  if (!((bytes as unknown) instanceof Uint8Array)) {
    throw new DecodeError(`cannot decode job: expected a Buffer, got ${describe(bytes)}`);
  }
  let fields: Record<string, unknown>;
  try {
    fields = readEnvelopeFields(bytes);
  } catch (e) {
    const reason =
      e instanceof Problem
        ? e.message
        : `they could not be read (${errorMessage(e)}); they are truncated, corrupt or were written by another codec`;
    throw new DecodeError(`cannot decode job: the bytes are not a valid delayq.v1.Envelope: ${reason}`, {
      cause: e,
    });
  }
  return validateEnvelope(fields, (payload, id) =>
    decodePayloadWith(schema, payload as Uint8Array, ` ${id}`),
  );
}

/**
 * A codec that stores jobs as a delayq.v1.Envelope whose payload is a message of `schema`, the descriptor
 * protoc-gen-es generated for your payload type (for example `EmailSchema` from `email_pb.ts`). Job payloads
 * must be messages of that type (`create(EmailSchema, { ... })`); handlers receive them decoded.
 */
export function protobufCodec<Desc extends DescMessage>(schema: Desc): ProtobufCodec<Desc> {
  if (
    typeof schema !== 'object' ||
    schema === null ||
    (schema as { kind?: unknown }).kind !== 'message' ||
    typeof (schema as { typeName?: unknown }).typeName !== 'string'
  ) {
    throw new ValidationError(
      `protobufCodec(schema) needs the message descriptor protoc-gen-es generated for the payload type (for example EmailSchema from email_pb.ts), got ${describe(schema)}`,
    );
  }
  return Object.freeze({
    name: 'protobuf',
    schema,
    encodePayload: (payload: unknown) => {
      const body = encodePayloadWith(schema, payload);
      return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    },
    decodePayload: (bytes: Buffer) => decodePayloadWith(schema, bytes),
    envelope: Object.freeze({
      name: 'protobuf',
      encode: (envelope: Envelope) => encodeWith(schema, envelope),
      decode: (bytes: Buffer) => decodeWith(schema, bytes),
    }),
  });
}
