import { describe, expect, it } from 'vitest';
import { LeaseLostError, ProgressTooLargeError, ValidationError } from '../errors.js';
import { ProgressReporter } from './progress.js';
import { encodeProgress, PROGRESS_MAX_BYTES } from './progress-value.js';

/** A write the test finishes by hand, recording each value it was given. */
function manualWrite() {
  const written: string[] = [];
  const finish: Array<(err?: Error) => void> = [];
  const write = (json: string) =>
    new Promise<void>((resolve, reject) => {
      written.push(json);
      finish.push((err) => (err ? reject(err) : resolve()));
    });
  return { written, finish, write };
}

describe('encodeProgress', () => {
  it('takes JSON data as it is', () => {
    expect(encodeProgress('j', 42)).toBe('42');
    expect(encodeProgress('j', { pct: 50, stage: 'upload', items: [1, null, true] })).toBe(
      '{"pct":50,"stage":"upload","items":[1,null,true]}',
    );
    expect(encodeProgress('j', Object.assign(Object.create(null) as object, { a: 1 }))).toBe('{"a":1}');
  });

  it.each([
    ['a function', () => 1, 'progress is a function'],
    ['a BigInt', 10n, 'progress is a BigInt'],
    ['undefined inside an object', { a: undefined }, 'progress.a is undefined'],
    ['NaN in an array', [1, Number.NaN], 'progress[1] is NaN'],
    ['a symbol', Symbol('s'), 'progress is a symbol'],
    ['a Date', new Date(0), 'progress is a Date'],
    ['a Map', new Map(), 'progress is a Map'],
  ])('refuses %s with a ValidationError naming the path', (_what, value, message) => {
    expect(() => encodeProgress('j', value)).toThrow(ValidationError);
    expect(() => encodeProgress('j', value)).toThrow(message);
  });

  it('refuses a cycle', () => {
    const loop: Record<string, unknown> = { a: 1 };
    loop.self = loop;
    expect(() => encodeProgress('j', loop)).toThrow(/progress\.self is a cycle/);
  });

  it('refuses a value over the cap with ProgressTooLargeError; the cap itself is accepted', () => {
    const atCap = 'x'.repeat(PROGRESS_MAX_BYTES - 2); // two quotes
    expect(encodeProgress('j', atCap)).toHaveLength(PROGRESS_MAX_BYTES);
    const err = (() => {
      try {
        encodeProgress('j', `${atCap}x`);
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(ProgressTooLargeError);
    expect(err).toMatchObject({ size: PROGRESS_MAX_BYTES + 1, limit: PROGRESS_MAX_BYTES });
  });
});

describe('ProgressReporter', () => {
  it('100 reports in a tight loop: one write at once, then one with the last value', async () => {
    const w = manualWrite();
    const reporter = new ProgressReporter('j', w.write, 20);
    const done = Array.from({ length: 100 }, (_, i) => reporter.report(i));
    expect(w.written).toEqual(['0']);
    w.finish[0]?.();
    await done[0];
    // The trailing write waits out the interval, then carries the last value only.
    await waitUntil(() => w.written.length === 2);
    expect(w.written).toEqual(['0', '99']);
    w.finish[1]?.();
    await Promise.all(done);
  });

  it('never has two writes in flight', async () => {
    const w = manualWrite();
    const reporter = new ProgressReporter('j', w.write, 0);
    const first = reporter.report('a');
    const second = reporter.report('b');
    await new Promise((r) => setImmediate(r));
    expect(w.written).toEqual(['"a"']);
    w.finish[0]?.();
    await first;
    await waitUntil(() => w.written.length === 2);
    expect(w.written).toEqual(['"a"', '"b"']);
    w.finish[1]?.();
    await second;
  });

  it('a bad value is refused without a write and without disturbing the waiting one', async () => {
    const w = manualWrite();
    const reporter = new ProgressReporter('j', w.write, 0);
    await expect(reporter.report(() => 1)).rejects.toBeInstanceOf(ValidationError);
    expect(w.written).toEqual([]);
  });

  it('end(): a waiting value is not written; its report resolves, or rejects with the loss', async () => {
    const w = manualWrite();
    const reporter = new ProgressReporter('j', w.write, 1_000);
    const first = reporter.report(1);
    const waiting = reporter.report(2);
    const lost = new LeaseLostError('j', 'expired');
    reporter.end(lost);
    await expect(waiting).rejects.toBe(lost);
    await expect(reporter.report(3)).rejects.toBe(lost);
    w.finish[0]?.();
    await first;
    expect(w.written).toEqual(['1']);

    const ended = new ProgressReporter('k', w.write, 0);
    ended.end(null);
    await expect(ended.report(4)).resolves.toBeUndefined();
    expect(w.written).toEqual(['1']);
  });

  it('a report not awaited whose write is refused is no unhandled rejection; a bad value is', async () => {
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      const w = manualWrite();
      const reporter = new ProgressReporter('j', w.write, 0);
      void reporter.report(1);
      w.finish[0]?.(new LeaseLostError('j', 'not held'));
      const bad = reporter.report(() => 1);
      await new Promise((r) => setTimeout(r, 0));
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toHaveLength(1);
      expect(unhandled[0]).toBeInstanceOf(ValidationError);
      await expect(bad).rejects.toBeInstanceOf(ValidationError);
    } finally {
      process.off('unhandledRejection', listener);
    }
  });

  it('a refused write rejects every report it carried', async () => {
    const w = manualWrite();
    const reporter = new ProgressReporter('j', w.write, 0);
    const report = reporter.report(1);
    w.finish[0]?.(new LeaseLostError('j', 'not held'));
    await expect(report).rejects.toBeInstanceOf(LeaseLostError);
  });
});

async function waitUntil(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met within 2 s');
    await new Promise((r) => setTimeout(r, 1));
  }
}
