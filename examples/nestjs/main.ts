/**
 * delayq in a NestJS application: DelayqModule.forRoot() once, registerQueue() where a queue is
 * used, @InjectQueue() to add jobs, and a @Processor() class whose process(job) runs them. The
 * worker starts when the app boots and closes gracefully with app.close(). Starts a throwaway
 * redis-server of its own (never 127.0.0.1:6379) and ends by itself.
 *
 *   npx tsx --tsconfig examples/nestjs/tsconfig.json examples/nestjs/main.ts
 *
 * Decorators need "experimentalDecorators" (and, for Nest's type-based injection,
 * "emitDecoratorMetadata") in your tsconfig. In your project the imports are `from 'delayq'` and
 * `from 'delayq/nestjs'`.
 */
import 'reflect-metadata';
import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Job, Queue } from '../../src/index.js';
import { DelayqModule, InjectQueue, Processor, type DelayqProcessor } from '../../src/nestjs/index.js';
import { startRedis } from '../../src/testing/index.js';

const redis = await startRedis();
const REDIS_URL = redis.url;

interface Reminder {
  to: string;
  text: string;
}

@Injectable()
class Outbox {
  readonly sent: string[] = [];
}

@Processor('reminders', { concurrency: 5 })
class ReminderProcessor implements DelayqProcessor<Reminder> {
  // Explicit tokens: tsx (esbuild) does not emit decorator metadata.
  constructor(@Inject(Outbox) private readonly outbox: Outbox) {}

  async process(job: Job<Reminder>): Promise<void> {
    this.outbox.sent.push(`${job.payload.to}: ${job.payload.text}`);
  }
}

@Injectable()
class Reminders {
  constructor(@InjectQueue('reminders') private readonly queue: Queue<Reminder>) {}

  remind(to: string, text: string, delay: string): Promise<unknown> {
    return this.queue.add({ to, text }, { delay });
  }
}

@Module({
  imports: [
    DelayqModule.forRoot({ connection: REDIS_URL }),
    DelayqModule.registerQueue({ name: 'reminders' }),
  ],
  providers: [Outbox, ReminderProcessor, Reminders],
})
class AppModule {}

try {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['warn', 'error'] });
  app.enableShutdownHooks(); // SIGTERM -> app.close(): the worker finishes its running jobs first
  await app.get(Reminders).remind('ada@example.com', 'standup', '100ms');
  await app.get(Reminders).remind('bob@example.com', 'review', '200ms');

  const outbox = app.get(Outbox);
  const deadline = Date.now() + 10_000;
  while (outbox.sent.length < 2) {
    if (Date.now() > deadline) throw new Error(`only ${outbox.sent.length} reminders sent in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  console.log(`sent:\n  ${outbox.sent.join('\n  ')}`);
  await app.close();
} finally {
  await redis.stop();
}
