import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { decodeRecord } from './decode.js';
import { encodeRecord } from './encode.js';
import { CANCELLED_RECORD, COMPLETED_RECORD, completedRecordWithResult } from './final.js';
import { NEW_JOB_HEADER, recordToken } from './header.js';
import { RecordFormatError } from './record-format-error.js';

const payload = Buffer.from('{"to":"ada@example.com"}');

describe('decodeRecord refuses what it cannot read', () => {
  it('an unknown format byte', () => {
    expect(() => decodeRecord(Buffer.from('0200', 'hex'))).toThrow(RecordFormatError);
    expect(() => decodeRecord(Buffer.from('0200', 'hex'))).toThrow(/format byte is 0x02/);
  });

  it('reserved bits in flags B', () => {
    expect(() => decodeRecord(Buffer.from('018080', 'hex'))).toThrow(/reserved bits/);
    expect(() => decodeRecord(Buffer.from('018080', 'hex'))).toThrow(RecordFormatError);
  });

  it('a header shorter than its flags announce', () => {
    // Claim block announced, 5 of its 20 bytes present.
    expect(() => decodeRecord(Buffer.from('01010002000201', 'hex'))).toThrow(/truncated.*claim block/);
    expect(() => decodeRecord(Buffer.from('01', 'hex'))).toThrow(RecordFormatError);
    expect(() => decodeRecord(Buffer.from('0180', 'hex'))).toThrow(/flags B/);
    // Group of 5 bytes announced, 2 present.
    expect(() => decodeRecord(Buffer.from('0110056731', 'hex'))).toThrow(/the group/);
  });

  it('an unknown backoff kind', () => {
    expect(() => decodeRecord(Buffer.from('010403000001f4ffffffff', 'hex'))).toThrow(/backoff kind 3/);
  });
});

describe('encodeRecord', () => {
  it('leaves out every default field: a new job is two bytes of header', () => {
    const record = encodeRecord(NEW_JOB_HEADER, payload);
    expect(record.subarray(0, 2).toString('hex')).toBe('0100');
    expect(decodeRecord(record).payload.equals(payload)).toBe(true);
  });

  it('names the field that is out of range', () => {
    expect(() => encodeRecord({ ...NEW_JOB_HEADER, priority: 1024 })).toThrow(ValidationError);
    expect(() => encodeRecord({ ...NEW_JOB_HEADER, priority: 1024 })).toThrow(
      /priority must be a whole number -1024..1023/,
    );
    expect(() => encodeRecord({ ...NEW_JOB_HEADER, maxAttempts: 0 })).toThrow(/maxAttempts/);
    expect(() => encodeRecord({ ...NEW_JOB_HEADER, group: 'a\u0000b' })).toThrow(/control characters/);
    expect(() => encodeRecord({ ...NEW_JOB_HEADER, attempts: 1 })).toThrow(/claims is 0/);
    expect(() => encodeRecord({ ...NEW_JOB_HEADER, hasResult: true })).toThrow(/hasResult/);
  });

  it('decodes the payload as a view into the record, not a copy', () => {
    const record = encodeRecord({ ...NEW_JOB_HEADER, priority: 3 }, payload);
    const decoded = decodeRecord(record);
    expect(decoded.payload.buffer).toBe(record.buffer);
    expect(decoded.payload.byteOffset).toBe(record.byteOffset + 4);
  });
});

describe('final records and tokens', () => {
  it('are the bytes of §3.2 and decode as such', () => {
    expect(decodeRecord(COMPLETED_RECORD).header.completed).toBe(true);
    expect(decodeRecord(CANCELLED_RECORD).header.cancelled).toBe(true);
    const withResult = decodeRecord(completedRecordWithResult(Buffer.from('42')));
    expect(withResult.header).toMatchObject({ completed: true, hasResult: true });
    expect(withResult.payload.toString()).toBe('42');
  });

  it('a token is claims and claim time', () => {
    expect(recordToken({ claims: 3, claimedAt: 1767225600123 })).toBe('3.1767225600123');
  });
});
