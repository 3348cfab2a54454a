/**
 * The packed form's bytes (docs/PROTOCOL.md, "Adding a job"): the example there, byte for byte,
 * and the jobs it cannot hold, which go in the per-job form instead.
 */
import { describe, expect, it } from 'vitest';
import { packAddJobs, recordBuffer, textRecord, type PackableJob } from './add-pack.js';

// PROTOCOL.md's example job: flags A = P, priority -5, then the payload.
const record = Buffer.concat([Buffer.from('0108fffb', 'hex'), Buffer.from('{"to":"ada@example.com"}')]);

describe('packAddJobs', () => {
  it('writes id length, id, mode, when (uint48), record length and record per job, in order (as PROTOCOL.md shows)', () => {
    const jobs: PackableJob[] = [
      { id: 'welcome:42', when: { delay: 600_000 }, record, mode: 'keep' },
      { id: 'é', when: { at: 1_767_225_600_123 }, record: Buffer.from('0100', 'hex'), mode: 'replace' },
    ];
    expect(packAddJobs(jobs)?.toString('hex')).toBe(
      [
        '000a',
        Buffer.from('welcome:42').toString('hex'),
        '646b', // 'dk'
        '0000000927c0', // 600000
        '0000001c',
        record.toString('hex'),
        '0002',
        'c3a9', // 'é' in UTF-8: the length counts bytes
        '6172', // 'ar'
        '019b76daa87b', // 1767225600123
        '00000002',
        '0100',
      ].join(''),
    );
  });

  it('writes a text record (header bytes, then the text as UTF-8) as the same bytes as its Buffer', () => {
    const text = textRecord(Buffer.from('0108fffb', 'hex'), '{"to":"adä@example.com €"}');
    const bytes = Buffer.concat([Buffer.from('0108fffb', 'hex'), Buffer.from('{"to":"adä@example.com €"}')]);
    expect(text.length).toBe(bytes.length);
    expect(recordBuffer(text)).toStrictEqual(bytes);
    expect(recordBuffer(bytes)).toBe(bytes);
    const jobs = (record: PackableJob['record']): PackableJob[] => [
      { id: 'a', when: { delay: 5 }, record, mode: 'keep' },
      { id: 'b', when: { at: 7 }, record: Buffer.from('0100', 'hex'), mode: 'new' },
      { id: 'c', when: { delay: 0 }, record, mode: 'replace' },
    ];
    expect(packAddJobs(jobs(text))).toStrictEqual(packAddJobs(jobs(bytes)));
  });

  it('marks a generated id n', () => {
    const packed = packAddJobs([{ id: 'x', when: { delay: 0 }, record, mode: 'new' }]);
    expect(packed?.subarray(3, 5).toString()).toBe('dn');
  });

  it.each([
    ['a fractional delay', { delay: 1.5 }],
    ['a negative delay', { delay: -1 }],
    ['a due time past uint48', { at: 2 ** 48 }],
    ['a delay that is not a number', { delay: Number.NaN }],
  ])('holds no job with %s: the per-job form refuses it by name', (_what, when) => {
    expect(
      packAddJobs([
        { id: 'a', when: { delay: 0 }, record, mode: 'keep' },
        { id: 'b', when, record, mode: 'keep' },
      ]),
    ).toBeUndefined();
  });

  it('holds no id over 65535 bytes of UTF-8', () => {
    expect(
      packAddJobs([{ id: 'é'.repeat(40_000), when: { delay: 0 }, record, mode: 'keep' }]),
    ).toBeUndefined();
  });
});
