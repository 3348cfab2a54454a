import { describe, expect, it } from 'vitest';
import { ProgressTooLargeError, ValidationError } from '../errors.js';
import { runHandler } from './index.js';

describe('runHandler: job.progress', () => {
  it('hands each accepted value to onProgress, and refuses what a worker would refuse', async () => {
    const seen: unknown[] = [];
    const refused: unknown[] = [];
    await runHandler(
      async (job) => {
        await job.progress({ pct: 10 });
        await job.progress(100);
        for (const bad of [10n, 'x'.repeat(5_000)])
          await job.progress(bad).catch((e: unknown) => refused.push(e));
      },
      { n: 1 },
      { onProgress: (value) => seen.push(value) },
    );
    expect(seen).toEqual([{ pct: 10 }, 100]);
    expect(refused[0]).toBeInstanceOf(ValidationError);
    expect(refused[1]).toBeInstanceOf(ProgressTooLargeError);
  });
});
