/**
 * The committed record vectors (test/vectors/records/headers.json): encodeRecord writes each
 * header to exactly the stored bytes, and decodeRecord reads them back to the same header.
 */
import { describe, expect, it } from 'vitest';
import { decodeRecord, encodeRecord } from '../../src/record/index.js';
import { loadRecordVectors } from './records/load.js';

describe('record vectors', () => {
  for (const v of loadRecordVectors()) {
    it(`${v.name}: ${v.description}`, () => {
      const payload = Buffer.from(v.payloadHex, 'hex');
      expect(encodeRecord(v.full, payload).toString('hex')).toBe(v.hex);
      const decoded = decodeRecord(Buffer.from(v.hex, 'hex'));
      expect(decoded.header).toStrictEqual(v.full);
      expect(decoded.payload.toString('hex')).toBe(v.payloadHex);
      expect(decoded.headerLength).toBe(v.hex.length / 2 - payload.length);
    });
  }
});
