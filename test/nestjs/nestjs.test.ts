/**
 * delayq/nestjs in a real Nest application (Test.createTestingModule, app.init(), app.close())
 * against a real redis-server: @InjectQueue gives the registered Queue, a @Processor's worker is
 * claiming once init() resolves, and close() lets a running job finish before it returns and leaves
 * no Redis connection open. Decorators need experimentalDecorators: see tsconfig.json here.
 */
import 'reflect-metadata';
import { Inject, Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Queue, Worker, type Job } from '../../src/index.js';
import { DelayqModule, InjectQueue, Processor, type DelayqProcessor } from '../../src/nestjs/index.js';
import { decodeRecord } from '../../src/record/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

interface Email {
  to: string;
  flaky?: boolean;
}

/** What the processor did, and a gate a test can hold a job at. */
class Outbox {
  readonly sent: Array<{ to: string; attempt: number }> = [];
  readonly attempts: string[] = [];
  gate: Promise<void> = Promise.resolve();
}

function emailApp(name: string) {
  @Processor(name, { concurrency: 2, backoff: () => 10 })
  class EmailProcessor implements DelayqProcessor<Email> {
    constructor(@Inject(Outbox) private readonly outbox: Outbox) {}

    async process(job: Job<Email>): Promise<string> {
      this.outbox.attempts.push(`${job.payload.to}#${job.attempt}`);
      await this.outbox.gate;
      if (job.payload.flaky && job.attempt === 1) throw new Error('smtp 451, try later');
      this.outbox.sent.push({ to: job.payload.to, attempt: job.attempt });
      return 'sent';
    }
  }

  @Injectable()
  class Signup {
    constructor(@InjectQueue(name) readonly queue: Queue<Email>) {}

    welcome(to: string, flaky = false): Promise<unknown> {
      return this.queue.add({ to, flaky }, { id: `welcome:${to}`, attempts: 3 });
    }
  }

  return { EmailProcessor, Signup };
}

async function start(
  name: string,
  outbox: Outbox,
): Promise<{
  app: INestApplication;
  signup: { queue: Queue<Email>; welcome(to: string, flaky?: boolean): Promise<unknown> };
}> {
  const { EmailProcessor, Signup } = emailApp(name);
  const moduleRef = await Test.createTestingModule({
    imports: [
      DelayqModule.forRoot({ connection: redis.url(), shutdownTimeoutMs: 5_000 }),
      DelayqModule.registerQueue({ name }),
    ],
    providers: [{ provide: Outbox, useValue: outbox }, EmailProcessor, Signup],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return { app, signup: app.get(Signup) };
}

describe('delayq/nestjs', () => {
  it('injects the queue and runs a processor from bootstrap, retries included', async () => {
    const name = uniqueQueue('nest');
    // A job waiting before the app starts: the worker must pick it up once init() resolves.
    const early = new Queue<Email>(name, { connection: redis.url() });
    open.push(early);
    await early.add({ to: 'early@example.com' }, { id: 'early' });
    const outbox = new Outbox();
    const { app, signup } = await start(name, outbox);
    open.push(app);
    expect(signup.queue).toBeInstanceOf(Queue);
    expect(signup.queue.name).toBe(name);

    await signup.welcome('ada@example.com');
    await signup.welcome('bob@example.com', true);
    await waitFor(() => outbox.sent.length === 3, { what: 'three emails sent' });
    expect(outbox.sent.sort((a, b) => a.to.localeCompare(b.to))).toEqual([
      { to: 'ada@example.com', attempt: 1 },
      { to: 'bob@example.com', attempt: 2 },
      { to: 'early@example.com', attempt: 1 },
    ]);
    expect(outbox.attempts).toContain('bob@example.com#1');
    await waitFor(async () => (await signup.queue.counts()).active === 0, { what: 'acks' });
    expect(await signup.queue.counts()).toEqual({
      scheduled: 0,
      due: 0,
      held: 0,
      active: 0,
      dead: 0,
      completed: 3,
      cancelled: 0,
      waitingChildren: 0,
    });
  });

  it('close() lets a running job finish, then closes every connection it opened', async () => {
    const name = uniqueQueue('nest');
    const outbox = new Outbox();
    let release!: () => void;
    outbox.gate = new Promise<void>((resolve) => (release = resolve));
    const r = inspector(redis.url());
    open.push({ close: () => r.quit() });
    await r.client('SETNAME', 'inspector');
    const { app, signup } = await start(name, outbox);

    await signup.welcome('slow@example.com');
    await waitFor(() => outbox.attempts.length === 1, { what: 'the job to start' });
    expect(await r.zcard(queueKeys(name).leases)).toBe(1);

    let closed = false;
    const closing = app.close().then(() => (closed = true));
    // Shutdown waits for the running job: still open while the handler is held.
    await waitFor(async () => (await signup.queue.counts()).active === 1, { what: 'job still held' });
    expect(closed).toBe(false);
    release();
    await closing;
    expect(outbox.sent).toEqual([{ to: 'slow@example.com', attempt: 1 }]);
    expect(await r.zcard(queueKeys(name).leases)).toBe(0);
    // The job completed: only its completed record is left (its claim block: attempt 1, and
    // nothing of the payload), listed in the completed set.
    expect(await r.zcard(queueKeys(name).completed)).toBe(1);
    const records = await r.hvalsBuffer(queueKeys(name).records);
    expect(records.map((record) => decodeRecord(record))).toMatchObject([
      { header: { completed: true, attempts: 1 }, payload: Buffer.alloc(0) },
    ]);
    // Nothing the app opened is left connected: only this inspector remains.
    await waitFor(
      async () => {
        const clients = (await r.client('LIST')) as string;
        return clients.trim().split('\n').length === 1 && clients.includes('name=inspector');
      },
      { what: 'the app to close its Redis connections' },
    );
  });

  it('forRootAsync() takes its options from a factory over other providers', async () => {
    const name = uniqueQueue('nest');
    @Module({ providers: [{ provide: 'REDIS_URL', useValue: redis.url() }], exports: ['REDIS_URL'] })
    class ConfigModule {}
    const outbox = new Outbox();
    const { EmailProcessor, Signup } = emailApp(name);
    const moduleRef = await Test.createTestingModule({
      imports: [
        DelayqModule.forRootAsync({
          imports: [ConfigModule],
          inject: ['REDIS_URL'],
          useFactory: async (url: string) => ({ connection: url }),
        }),
        DelayqModule.registerQueue({ name }),
      ],
      providers: [{ provide: Outbox, useValue: outbox }, EmailProcessor, Signup],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    open.push(app);
    await app.init();
    await app.get(Signup).welcome('cy@example.com');
    await waitFor(() => outbox.sent.length === 1, { what: 'the email sent' });
    expect(outbox.sent).toEqual([{ to: 'cy@example.com', attempt: 1 }]);
  });

  it('a processor that cannot start fails init() and leaves no other worker running', async () => {
    const name = uniqueQueue('nest');
    const outbox = new Outbox();
    const { EmailProcessor } = emailApp(name);
    @Processor(`${name}-bad`, { concurrency: 0 })
    class Misconfigured {
      async process(): Promise<void> {}
    }
    const r = inspector(redis.url());
    open.push({ close: () => r.quit() });
    await r.client('SETNAME', 'inspector');
    const moduleRef = await Test.createTestingModule({
      imports: [DelayqModule.forRoot({ connection: redis.url() }), DelayqModule.registerQueue({ name })],
      providers: [{ provide: Outbox, useValue: outbox }, EmailProcessor, Misconfigured],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    open.push(app);
    const close = vi.spyOn(Worker.prototype, 'close');
    try {
      await expect(app.init()).rejects.toThrow(/concurrency/);
      // The worker that did start is closed at once, not left claiming until app.close().
      expect(close).toHaveBeenCalledTimes(1);
    } finally {
      close.mockRestore();
    }
    const clients = async (): Promise<string[]> => ((await r.client('LIST')) as string).trim().split('\n');
    await app.close();
    await waitFor(async () => (await clients()).length === 1, { what: 'the queue to close' });
  });

  it('refuses to start a @Processor class without a process(job) method', async () => {
    const name = uniqueQueue('nest');
    @Processor(name)
    class Forgetful {}
    const moduleRef = await Test.createTestingModule({
      imports: [DelayqModule.forRoot({ connection: redis.url() }), DelayqModule.registerQueue({ name })],
      providers: [Forgetful],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    open.push(app);
    await expect(app.init()).rejects.toThrow(/Forgetful has no process\(job\) method/);
  });
});
