import { describe, expect, it } from 'vitest';
import { packAddJobs, packedJobBytes, textRecord, type PackableJob } from '../operations/add-pack.js';
import { addCallLengths } from './add-calls.js';

/** A job whose packed size is exactly `bytes` (ASCII id, Buffer record). */
function jobOf(bytes: number, id = 'j'): PackableJob {
  return { id, when: { delay: 0 }, record: Buffer.alloc(bytes - 14 - id.length, 1), mode: 'keep' };
}

describe('addCallLengths', () => {
  it('cuts at the job bound when the jobs are small', () => {
    const jobs = Array.from({ length: 450 }, () => jobOf(100));
    expect(addCallLengths(jobs, { jobs: 200, bytes: 1_000_000, inFlight: 2 })).toEqual([200, 200, 50]);
  });

  it('cuts at the byte bound when the jobs are large: no call over it', () => {
    const jobs = Array.from({ length: 10 }, () => jobOf(30_000));
    expect(addCallLengths(jobs, { jobs: 200, bytes: 100_000, inFlight: 2 })).toEqual([3, 3, 3, 1]);
    // Exactly at the bound still fits.
    expect(addCallLengths(jobs.slice(0, 4), { jobs: 200, bytes: 120_000, inFlight: 2 })).toEqual([4]);
  });

  it('sends a job larger than the byte bound alone, never splitting or dropping it', () => {
    const jobs = [jobOf(20), jobOf(500_000), jobOf(20), jobOf(20)];
    expect(addCallLengths(jobs, { jobs: 200, bytes: 1_000, inFlight: 2 })).toEqual([1, 1, 2]);
  });

  it('counts a job as its packed bytes (exact for an ASCII id, text records included)', () => {
    const jobs: PackableJob[] = [
      { id: 'welcome:42', when: { at: 1_767_225_600_123 }, record: Buffer.from('0100', 'hex'), mode: 'new' },
      {
        id: 'x',
        when: { delay: 5 },
        record: textRecord(Buffer.from('0100', 'hex'), '{"a":"ü"}'),
        mode: 'keep',
      },
    ];
    const total = jobs.reduce((sum, job) => sum + packedJobBytes(job), 0);
    expect(total).toBe(packAddJobs(jobs)!.length);
  });

  it('answers nothing for no jobs', () => {
    expect(addCallLengths([], { jobs: 200, bytes: 1_000, inFlight: 2 })).toEqual([]);
  });
});
