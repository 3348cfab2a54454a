/**
 * fast-check arbitraries for the codec property tests: payloads of every kind the json and msgpack codecs
 * keep, envelopes around them, and messages of the protobuf test type.
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import fc from 'fast-check';
import { ENVELOPE_FORMAT, type Envelope } from '../../src/codec/codec.js';
import {
  EmailSchema,
  Priority,
  RecipientSchema,
  type Email,
  type Recipient,
} from '../fixtures/proto/gen/email_pb.js';

/** Unicode text: any code point (never a lone surrogate), printable graphemes, or ASCII. */
export const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.string({ maxLength: 12 }),
);

/**
 * Object keys, with the ones that look special to some codec or to JavaScript mixed in. Not "__proto__"
 * (the codecs refuse it) nor "constructor" (vitest's toStrictEqual compares `a.constructor` to tell types
 * apart, so two equal objects with distinct own "constructor" objects look different); the hostile-input
 * tests cover both.
 */
export const objectKey: fc.Arbitrary<string> = fc
  .oneof(text, fc.constantFrom('~t', '~~t', '~x', 'v', 'prototype', 'toString', 'hasOwnProperty', '', '0'))
  .filter((key) => key !== '__proto__' && key !== 'constructor');

const number: fc.Arbitrary<number> = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(
    0,
    -0,
    NaN,
    Infinity,
    -Infinity,
    2 ** 32,
    2 ** 53 - 1,
    -(2 ** 53) + 1,
    2 ** 53,
    1e300,
    5e-324,
  ),
);

const bigint: fc.Arbitrary<bigint> = fc.oneof(
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
  fc.bigInt({ min: -(2n ** 600n), max: 2n ** 600n }),
  fc.constantFrom(0n, -1n, 127n, 128n, -128n, -129n, 2n ** 63n, -(2n ** 63n), 2n ** 64n),
);

const leaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  number,
  bigint,
  text,
  fc.date({ noInvalidDate: true }),
  fc.uint8Array({ maxLength: 24 }),
  fc.uint8Array({ maxLength: 24 }).map((bytes) => Buffer.from(bytes)),
);

/** Payload values of every kind the json and msgpack codecs keep, nested (empty containers included). */
export const payload: fc.Arbitrary<unknown> = fc.letrec<{
  value: unknown;
  array: unknown[];
  object: Record<string, unknown>;
  map: Map<unknown, unknown>;
  set: Set<unknown>;
}>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    tie('array'),
    tie('object'),
    tie('map'),
    tie('set'),
  ),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(objectKey, tie('value'), { maxKeys: 5, noNullPrototype: true }),
  map: fc.array(fc.tuple(tie('value'), tie('value')), { maxLength: 4 }).map((entries) => new Map(entries)),
  set: fc.array(tie('value'), { maxLength: 4 }).map((items) => new Set(items)),
})).value;

/** The envelope fields around a payload; createdAt as the codecs receive it (an integer, epoch ms). */
export const envelopeFields = fc.record(
  {
    id: text,
    version: fc.integer({ min: 1, max: 2 ** 31 }),
    createdAt: fc.oneof(fc.integer({ min: 0, max: 2 ** 45 }), fc.maxSafeInteger(), fc.constant(0)),
    traceparent: text,
  },
  { requiredKeys: ['id', 'version', 'createdAt'] },
);

/** An envelope around a payload drawn from `payloadArb`. */
export function envelope(payloadArb: fc.Arbitrary<unknown>): fc.Arbitrary<Envelope> {
  return fc
    .tuple(envelopeFields, payloadArb)
    .map(([fields, value]) => ({ v: ENVELOPE_FORMAT, ...fields, payload: value }));
}

const recipient: fc.Arbitrary<Recipient> = fc.letrec<{ recipient: Recipient }>((tie) => ({
  recipient: fc
    .record({
      address: text,
      name: text,
      forwardedTo: fc.option(tie('recipient'), { nil: undefined, depthSize: 'small' }),
    })
    .map(({ forwardedTo, ...rest }) =>
      create(RecipientSchema, forwardedTo === undefined ? rest : { ...rest, forwardedTo }),
    ),
})).recipient;

const protoKey = text.filter((key) => key !== '__proto__');

/** Messages of the protobuf test type with every field drawn at random. */
export const emailMessage: fc.Arbitrary<Email> = fc
  .record({
    to: text,
    subject: text,
    body: fc.string({ unit: 'binary', maxLength: 200 }),
    userId: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    quota: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
    attachment: fc.uint8Array({ maxLength: 64 }),
    sendAfter: fc.option(fc.date({ noInvalidDate: true, min: new Date(-62135596800000) }), {
      nil: undefined,
    }),
    tags: fc.array(text, { maxLength: 4 }),
    headers: fc.dictionary(protoKey, text, { maxKeys: 4, noNullPrototype: true }),
    cc: fc.array(recipient, { maxLength: 3 }),
    score: fc.option(number, { nil: undefined }),
    urgent: fc.boolean(),
    priority: fc.constantFrom(Priority.UNSPECIFIED, Priority.LOW, Priority.HIGH, 7),
    retries: fc.integer(),
    traceId: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
    aliases: fc.dictionary(protoKey, recipient, { maxKeys: 3, noNullPrototype: true }),
    target: fc.oneof(
      fc.constant({ case: undefined }),
      text.map((value) => ({ case: 'listId' as const, value })),
      recipient.map((value) => ({ case: 'single' as const, value })),
    ),
  })
  .map(({ sendAfter, score, ...rest }) =>
    create(EmailSchema, {
      ...rest,
      ...(sendAfter === undefined ? {} : { sendAfter: timestampFromDate(sendAfter) }),
      ...(score === undefined ? {} : { score }),
    }),
  );
