/**
 * Type tests of results, snoozes and worker events: checked by `npm run typecheck` (tsc), never
 * run. `Worker<T, R>`'s handler must return R and its `completed` event gives R; `queue.get<R>()`
 * types the kept result; SnoozeError takes what `add`'s delay takes.
 */
import { expectTypeOf } from 'vitest';
import { Queue, SnoozeError, Worker, type Job, type JobInfo } from '../../src/index.js';

interface Delivery {
  url: string;
}
interface Receipt {
  status: number;
}

// The handler's return value is R; the completed event hands it over typed.
export const typed = () => {
  const worker = new Worker<Delivery, Receipt>('hooks', async (job) => {
    expectTypeOf(job.payload.url).toEqualTypeOf<string>();
    return { status: 200 };
  });
  worker.on('completed', (job, result) => {
    expectTypeOf(job).toEqualTypeOf<Job<Delivery>>();
    expectTypeOf(result).toEqualTypeOf<Receipt>();
  });
  worker.on('snoozed', (job, runAt, delayMs) => {
    expectTypeOf(job).toEqualTypeOf<Job<Delivery>>();
    expectTypeOf(runAt).toEqualTypeOf<Date>();
    expectTypeOf(delayMs).toEqualTypeOf<number>();
  });
  worker.on('released', (id, reason) => {
    expectTypeOf(id).toEqualTypeOf<string>();
    expectTypeOf(reason).toEqualTypeOf<'shutdown' | 'newer-version'>();
  });
  return worker;
};

// A handler that returns something else than R does not compile.
export const wrongResult = () =>
  // @ts-expect-error the handler must resolve to a Receipt
  new Worker<Delivery, Receipt>('hooks', async () => 'done');

// Without R, any result is accepted and typed unknown (as before).
export const untyped = () => {
  const worker = new Worker<Delivery>('hooks', async () => 42);
  worker.on('completed', (_job, result) => expectTypeOf(result).toEqualTypeOf<unknown>());
  return worker;
};

// queue.get<R>() types the kept result; without R it is unknown.
export const reads = async (queue: Queue<Delivery>) => {
  const info = await queue.get<Receipt>('id');
  expectTypeOf(info).toEqualTypeOf<JobInfo<Delivery, Receipt> | null>();
  expectTypeOf(info!.result).toEqualTypeOf<Receipt | undefined>();
  expectTypeOf((await queue.get('id'))!.result).toEqualTypeOf<unknown>();
  expectTypeOf(info!.finishedAt).toEqualTypeOf<Date | undefined>();
};

// SnoozeError takes ms or a duration string, as add's delay; nothing else.
expectTypeOf<ConstructorParameters<typeof SnoozeError>[0]>().toEqualTypeOf<number | string>();
export const snoozes = () => [new SnoozeError(30_000), new SnoozeError('30s')];
// @ts-expect-error a Date is not a delay (use add's runAt for a date)
export const badSnooze = () => new SnoozeError(new Date());
