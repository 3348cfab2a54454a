/**
 * Names and limits (issue 8, item 6): queue names and job ids are validated so that none can break
 * out of its keys, collide with another, or print as something else. One test per rule, each with
 * a name that the rule refuses and one just inside it; plus, against a real server, proof that an
 * accepted name with colons or glob characters stays in its own keys.
 */
import { describe, expect, test } from 'vitest';
import { Queue, ValidationError, Worker } from '../../src/index.js';
import { resolveAddOptions } from '../../src/job-options.js';
import { assertQueueName, queueKeys } from '../../src/redis/keys.js';
import { inspector, useRedis } from '../support/fixtures.js';

const redis = useRedis();

function queueNameError(name: unknown): string | null {
  try {
    assertQueueName(name);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as Error).message;
  }
}

function idError(id: unknown): string | null {
  try {
    resolveAddOptions({ id } as { id: string }, { attempts: 1 });
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as Error).message;
  }
}

describe('queue names', () => {
  test('must be a non-empty string', () => {
    expect(queueNameError('')).toMatch(/non-empty string/);
    expect(queueNameError(42)).toMatch(/non-empty string/);
    expect(queueNameError(undefined)).toMatch(/non-empty string/);
    expect(queueNameError('q')).toBeNull();
  });

  test('at most 200 bytes in UTF-8 (the key holds bytes, not characters)', () => {
    expect(queueNameError('a'.repeat(200))).toBeNull();
    expect(queueNameError('a'.repeat(201))).toMatch(/201 bytes.*keep it to 200/);
    // 67 three-byte characters are 201 bytes though only 67 characters.
    expect(queueNameError('€'.repeat(66))).toBeNull();
    expect(queueNameError('€'.repeat(67))).toMatch(/201 bytes/);
  });

  test('no braces: they would end the hash tag early and spread the queue over cluster slots', () => {
    for (const name of ['a{b', 'a}b', '{a}', 'a}:jobs']) expect(queueNameError(name), name).toMatch(/braces/);
  });

  test("no '#<digits>' at the end: that is the tag of a partition of another queue", () => {
    for (const name of ['q#0', 'q#12', 'a:b#3', '#7'])
      expect(queueNameError(name), name).toMatch(/'#' and digits/);
    for (const name of ['q#', 'q#a', 'q#1a', 'q#1:x', '#', 'q1'])
      expect(queueNameError(name), name).toBeNull();
  });

  test('no white space, control or format characters: a name must print as itself', () => {
    for (const name of [
      'a b',
      'a\tb',
      'a\nb',
      'a\u0000b',
      'a\u007fb',
      'a\u0085b',
      'a\u00a0b',
      'a\u2028b',
      'a\u202eb',
      'a\u200db',
      'a\ufeffb',
    ]) {
      expect(queueNameError(name), JSON.stringify(name)).toMatch(/white space, control or format/);
    }
  });

  test('well-formed Unicode only: two lone surrogates would be sent as the same bytes', () => {
    expect(Buffer.from('q\ud800').equals(Buffer.from('q\udc00'))).toBe(true);
    expect(queueNameError('q\ud800')).toMatch(/lone surrogate/);
    expect(queueNameError('q\udc00')).toMatch(/lone surrogate/);
    expect(queueNameError('q\u{1f600}')).toBeNull();
  });

  test('colons, pipes, glob characters and non-Latin letters are fine', () => {
    for (const name of ['emails:eu', 'a|b', 'a*', 'a?[x]\\', 'печать', 'メール', 'q\u{1f600}']) {
      expect(queueNameError(name), name).toBeNull();
    }
  });

  test('every queue entry point refuses a bad name before touching Redis', () => {
    expect(() => new Queue('a{b}', { connection: redis.url() })).toThrow(ValidationError);
    expect(() => new Worker('a\nb', async () => {}, { connection: redis.url(), autorun: false })).toThrow(
      ValidationError,
    );
    expect(() => queueKeys('a}b')).toThrow(ValidationError);
  });

  test('a name with colons or glob characters stays inside its own keys on a real server', async () => {
    // 'a' and 'a:b' and 'a*': the tag is everything between the braces, so none reaches another.
    const names = ['a', 'a:b', 'a*', 'a:b:c'];
    const queues = names.map((name) => new Queue<number>(name, { connection: redis.url() }));
    const r = inspector(redis.url());
    try {
      for (const [i, q] of queues.entries()) await q.add(i, { id: 'same-id', delay: 60_000 });
      for (const [i, name] of names.entries()) {
        const keys = Object.values(queueKeys(name));
        for (const key of keys) expect(key.startsWith(`dq:{${name}}:`), key).toBe(true);
        expect((await queues[i]!.get('same-id'))?.payload).toBe(i);
        expect(await r.zcard(queueKeys(name).waiting)).toBe(1);
      }
      const all = (await r.keys('dq:*')).filter((k) => k.endsWith('}:s')).sort();
      expect(all).toEqual(names.map((n) => `dq:{${n}}:s`).sort());
    } finally {
      await Promise.all(queues.map((q) => q.close()));
      await r.quit();
    }
  });
});

describe('job ids', () => {
  test('a generated id is 14 letters and digits (83 random bits), every character equally likely', () => {
    const ids = Array.from({ length: 20_000 }, () => resolveAddOptions({}, { attempts: 1 }).id);
    for (const id of ids) expect(id).toMatch(/^[0-9A-Za-z]{14}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // 280,000 characters over 62 symbols: each near 4,516 (standard deviation about 67); a biased
    // draw would be off by far more.
    const counts = new Map<string, number>();
    for (const c of ids.join('')) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    for (const n of counts.values()) expect(Math.abs(n - 280_000 / 62)).toBeLessThan(500);
  });

  test('must be a non-empty string of at most 512 characters', () => {
    expect(idError('')).toMatch(/non-empty string of at most 512/);
    expect(idError(7)).toMatch(/non-empty string/);
    expect(idError('i'.repeat(512))).toBeNull();
    expect(idError('i'.repeat(513))).toMatch(/at most 512/);
  });

  test('no control characters (newline, NUL, DEL, C1)', () => {
    for (const id of ['a\nb', 'a\rb', 'a\u0000', '\u007f', 'a\u0085']) {
      expect(idError(id), JSON.stringify(id)).toMatch(/control characters/);
    }
  });

  test('well-formed Unicode only: otherwise two ids are one job and the second add silently returns the first', () => {
    expect(idError('job\ud800')).toMatch(/lone surrogate/);
    expect(idError('job\udfff')).toMatch(/lone surrogate/);
    expect(idError('job\u{1f600}')).toBeNull();
  });

  test('braces, colons, pipes, spaces and any letters are fine: an id is a field, never part of a key', () => {
    for (const id of ['welcome:42', 'a|b|c', '{x}', 'order 17', 'заказ-1', '\u202eevil']) {
      expect(idError(id), id).toBeNull();
    }
  });

  test('the add of a refused id writes nothing', async () => {
    const queue = new Queue<number>('ids', { connection: redis.url() });
    try {
      await expect(queue.add(1, { id: 'a\nb' })).rejects.toThrow(ValidationError);
      await expect(
        queue.addBulk([
          { payload: 1, opts: { id: 'fine' } },
          { payload: 2, opts: { id: 'x\ud800' } },
        ]),
      ).rejects.toThrow(/job 1: .*lone surrogate/);
      expect(await queue.counts()).toEqual({
        scheduled: 0,
        due: 0,
        held: 0,
        active: 0,
        dead: 0,
        completed: 0,
        cancelled: 0,
        waitingChildren: 0,
      });
      // The ids that pass are stored exactly.
      await queue.add(3, { id: '{x}|é:1' });
      expect((await queue.get('{x}|é:1'))?.payload).toBe(3);
    } finally {
      await queue.close();
    }
  });
});
