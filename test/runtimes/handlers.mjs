// Handlers for `delayq worker` in scripts/runtimes.ts: the queue named by QUEUE, whose jobs
// fail their first attempt and then complete.
import process from 'node:process';

export const handlers = {
  [process.env.QUEUE ?? 'runtimes-cli']: async (job) => {
    if (job.attempt === 1) throw new Error('first attempt fails');
    return job.payload;
  },
};
