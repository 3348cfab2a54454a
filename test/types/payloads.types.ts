/**
 * Type tests: checked by `npm run typecheck` (tsc), never run. A type assertion inside a runtime
 * test only passes or fails with the type checker, so it misleads there; these live here instead.
 */
import { expectTypeOf } from 'vitest';
import { z } from 'zod';
import { Worker } from '../../src/index.js';

const Email = z.object({
  to: z.email(),
  subject: z.string().min(1),
  sendAt: z.coerce.date(),
});

// The handler's payload type is the schema's output (sendAt coerced to a Date).
type Handler = ConstructorParameters<typeof Worker<z.output<typeof Email>>>[1];
expectTypeOf<Parameters<Handler>[0]['payload']['sendAt']>().toEqualTypeOf<Date>();

// Given only a schema, Worker infers T from it.
export const make = () =>
  new Worker(
    'typed',
    async (job) => {
      expectTypeOf(job.payload.to).toEqualTypeOf<string>();
    },
    { schema: Email, autorun: false },
  );
expectTypeOf(make).returns.toEqualTypeOf<Worker<z.output<typeof Email>>>();
