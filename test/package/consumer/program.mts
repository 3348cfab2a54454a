/**
 * A user's program against the installed package, type-checked by test/package/packed.test.ts in
 * a fresh project (strict, exactOptionalPropertyTypes, skipLibCheck false). It touches every public
 * entry point and names the types a user writes down. Not run: its calls only have to type-check.
 */
import { createServer } from 'node:http';
import {
  Queue,
  Scheduler,
  UnrecoverableError,
  ValidationError,
  Worker,
  jsonCodec,
  type AddOptions,
  type AddResult,
  type BatchJob,
  type Counts,
  type EventsReadOptions,
  type GroupsOption,
  type Job,
  type JobInfo,
  type ListState,
  type OnExists,
  type StandardSchemaV1,
  type UpsertStatus,
  type WorkerOptions,
} from 'delayq';
import { createDashboard, startDashboard, type DashboardOptions } from 'delayq/dashboard';
import { DelayqMetrics, metricsHandler, type ObservedQueue } from 'delayq/metrics';
import { drain, runHandler, startRedis, type DrainResult } from 'delayq/testing';
import { DelayqModule, getQueueToken, type DelayqProcessor } from 'delayq/nestjs';

interface Email {
  to: string;
  subject: string;
}

const redis = await startRedis();
const queue = new Queue<Email>('emails', { connection: redis.url, codec: jsonCodec });
const options: AddOptions = { delay: '10m', id: 'welcome:42', onExists: 'replace' satisfies OnExists };
const added: AddResult = await queue.add({ to: 'ada@example.com', subject: 'Welcome' }, options);
const info: JobInfo<Email> | null = await queue.get(added.id);
const state: ListState = 'scheduled';
const listed = await queue.list(state, { offset: 0, limit: 10 });
const counts: Counts = await queue.counts();
const from: EventsReadOptions = { from: '0-0' };
for await (const event of queue.events(from)) {
  console.log(event.type, event.jobId);
  break;
}

async function send(job: Job<Email>): Promise<string> {
  if (!job.payload.to.includes('@')) throw new UnrecoverableError('bad address');
  job.signal.throwIfAborted();
  return job.payload.subject;
}
const groups: GroupsOption = { concurrency: 1 };
const workerOptions: WorkerOptions<Email> = { connection: redis.url, concurrency: 5, groups };
const worker = new Worker<Email>('emails', send, workerOptions);
worker.on('dead', (_job, err, id) => console.error(id, err.message));
const batches = new Worker<Email>(
  'emails',
  async (jobs: BatchJob<Email>[]) => {
    await Promise.all(jobs.map((job) => job.fail(new Error('no'))));
  },
  { connection: redis.url, batch: { size: 10 } },
);

const schema: StandardSchemaV1<unknown, Email> = {
  '~standard': {
    version: 1,
    vendor: 'example',
    validate: (value) => ({ value: value as Email }),
  },
};
const validated = new Queue('validated', { connection: redis.url, schema });
const scheduled: { status: UpsertStatus } = await queue.schedule(
  'digest',
  { every: '15m' },
  { to: 'x@y.z', subject: 'digest' },
);
const scheduler = new Scheduler(queue);
await scheduler.start();

const metrics = new DelayqMetrics();
const observed: ObservedQueue = queue;
metrics.observeQueue(observed);
const dashboardOptions: DashboardOptions = { connection: redis.url, basePath: '/delayq', metrics };
const dashboard = createDashboard(dashboardOptions);
const serveMetrics = metricsHandler(metrics);
createServer((req, res) => {
  if (req.url === '/metrics') return serveMetrics(req, res);
  dashboard.handler(req, res, () => res.writeHead(404).end());
});
const standalone = await startDashboard({ connection: redis.url, port: 0 });
console.log(standalone.url);

const result: string = await runHandler(send, { to: 'ada@example.com', subject: 'hi' });
const drained: DrainResult<Email> = await drain(queue, send, { timeoutMs: 1000 });

class Reminders implements DelayqProcessor<Email> {
  async process(job: Job<Email>): Promise<void> {
    await send(job);
  }
}
const nest = [
  DelayqModule.forRoot({ connection: redis.url }),
  DelayqModule.registerQueue({ name: 'emails' }),
];
const token: string = getQueueToken('emails');

try {
  await queue.add({ to: 'a', subject: 'b' }, { delay: -1 });
} catch (err) {
  if (err instanceof ValidationError) console.error(err.issues);
}
console.log(
  info,
  listed,
  counts,
  result,
  drained,
  nest,
  token,
  scheduled,
  new Reminders(),
  batches,
  validated,
);
await scheduler.stop();
await worker.close({ timeoutMs: 1000 });
await queue.close();
await redis.stop();
