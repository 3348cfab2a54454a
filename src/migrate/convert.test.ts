/**
 * convertJob: what one layout-1 job becomes, for the states and bookkeeping the integration tests
 * cannot easily produce with 0.1's scripts (backoff and timeout in meta, out-of-range counts,
 * unreadable meta, data deleted by hand).
 */
import { describe, expect, it } from 'vitest';
import { CANCELLED_RECORD, COMPLETED_RECORD, decodeRecord } from '../record/index.js';
import { convertJob, type PayloadConverter } from './convert.js';
import type { LegacyJob } from '../operations/migrate-read.js';

const NOW = 1767225600000;
const payloads: PayloadConverter = (envelope) => ({ payload: envelope, version: 1 });

function job(fields: Partial<LegacyJob>): LegacyJob {
  return {
    id: 'j',
    envelope: Buffer.from('P'),
    meta: '{"a":0,"m":3,"r":1767225660000}',
    lease: null,
    error: null,
    due: null,
    deadline: null,
    died: null,
    completed: null,
    done: null,
    cancelled: null,
    hasRecord: false,
    ...fields,
  };
}

describe('convertJob', () => {
  it('a waiting job keeps its due time, backoff and timeout; the compare-and-set carries its meta', () => {
    const meta =
      '{"a":0,"m":5,"r":1767225660000,"b":{"type":"exponential","delay":1000,"max":60000,"jitter":true},"o":30000}';
    const out = convertJob(job({ meta, due: 1767225660000 }), payloads, NOW);
    expect(out).toMatchObject({
      target: 's',
      score: 1767225660000,
      meta,
      lease: '',
      error: '',
      problem: null,
    });
    const { header, payload } = decodeRecord(out.record!);
    expect(header).toMatchObject({
      attempts: 0,
      claims: 0,
      maxAttempts: 5,
      timeoutMs: 30000,
      backoff: { type: 'exponential', delay: 1000, max: 60000, jitter: true },
    });
    expect(payload.toString()).toBe('P');
  });

  it('a running job becomes the lease member <attempts>.<lease start>|<id> with its deadline', () => {
    const out = convertJob(
      job({
        meta: '{"a":2,"m":3,"r":1767225600000}',
        lease: '7.1767225600050|1767225600050|worker-1|with|bars',
        deadline: 1767225615050,
      }),
      payloads,
      NOW,
    );
    expect(out).toMatchObject({ target: 'a', score: 1767225615050, member: '2.1767225600050|j' });
    expect(decodeRecord(out.record!).header).toMatchObject({
      attempts: 2,
      claims: 2,
      claimedAt: 1767225600050,
      runDue: 1767225600000,
    });
  });

  it('counts beyond the header fields are clamped, not wrapped', () => {
    const out = convertJob(job({ meta: '{"a":70000,"m":100000,"r":1}', died: NOW }), payloads, NOW);
    expect(decodeRecord(out.record!).header).toMatchObject({ attempts: 65535, maxAttempts: 65535 });
  });

  it('ids without data: done -> completed record, x -> cancelled record, nothing -> nothing', () => {
    expect(convertJob(job({ envelope: null, meta: null, done: 5 }), payloads, NOW)).toMatchObject({
      record: COMPLETED_RECORD,
      target: 'c',
      score: 5,
    });
    expect(convertJob(job({ envelope: null, meta: null, cancelled: 6 }), payloads, NOW)).toMatchObject({
      record: CANCELLED_RECORD,
      target: 'x',
      score: 6,
    });
    expect(convertJob(job({ envelope: null, meta: null }), payloads, NOW)).toMatchObject({
      record: null,
      target: '',
    });
  });

  it('buries, with the reason, a job whose data was deleted, whose meta is unreadable, or that does not decode', () => {
    const missing = convertJob(job({ envelope: null, due: 7 }), payloads, NOW);
    expect(missing).toMatchObject({ target: 'd', score: NOW });
    expect(missing.problem).toMatch(/job data missing/);
    const unreadable = convertJob(job({ meta: 'not json', due: 7 }), payloads, NOW);
    expect(unreadable.problem).toMatch(/bookkeeping \(meta\) is unreadable: not json/);
    const undecodable = convertJob(
      job({ due: 7 }),
      () => {
        throw new Error('bad bytes');
      },
      NOW,
    );
    expect(undecodable).toMatchObject({
      target: 'd',
      problem: expect.stringMatching(/bad bytes/) as unknown,
    });
    // The stored bytes stay as payload; the error says why, so the job is seen, never dropped.
    const { header, payload } = decodeRecord(undecodable.record!);
    expect(header.hasError).toBe(true);
    expect(payload.toString()).toBe('P');
    expect(JSON.parse(undecodable.error)).toMatchObject({ name: 'MigrateError', at: NOW });
  });
});
