/**
 * Owns every Queue and Worker delayq/nestjs makes: queues when a provider first needs one, one
 * Worker per @Processor class on application bootstrap (ready before bootstrap completes), and
 * closes them on shutdown: workers first (onModuleDestroy: stop claiming, let running jobs finish),
 * queues last (onApplicationShutdown), so the app's own destroy hooks can still add jobs.
 */
import { Logger } from '@nestjs/common';
import type { DiscoveryService, Reflector } from '@nestjs/core';
import type { Job } from '../job.js';
import { Queue, type QueueOptions } from '../queue.js';
import type { ConnectionOption } from '../redis/connection.js';
import { Worker } from '../worker.js';
import type { WorkerOptions } from '../worker/options.js';
import { PROCESSOR_METADATA } from './tokens.js';

/** Options of DelayqModule.forRoot(). */
export interface DelayqRootOptions {
  /** The Redis every queue and worker of the application uses unless one names its own. */
  connection: ConnectionOption;
  /** How long shutdown waits for running jobs before releasing them. Default 10 s. */
  shutdownTimeoutMs?: number;
}

/** Options of DelayqModule.registerQueue(): the queue's name and its Queue options. */
export interface RegisterQueueOptions<T = unknown> extends QueueOptions<T> {
  name: string;
}

/** Options of @Processor(): Worker options; `connection` defaults to the module's. */
export type ProcessorOptions = WorkerOptions<unknown>;

/** What @Processor() records on its class. */
export interface ProcessorMetadata {
  name: string;
  options: ProcessorOptions;
}

/** A class decorated with @Processor(): its `process` method handles each job. */
export interface DelayqProcessor<T = unknown> {
  /** Resolve (or return) when the job is done; throw (or reject) to fail the attempt. */
  process(job: Job<T>): unknown;
}

/** Options a queue's Queue and its Worker must agree on, taken from registerQueue() for the worker. */
const SHARED = ['codec', 'version', 'events', 'strategy', 'wheel', 'partitions'] as const;

/** The provider behind forRoot() that makes, starts and closes delayq's Queues and Workers. */
export class DelayqLifecycle {
  private readonly logger = new Logger('delayq');
  private readonly registered = new Map<string, RegisterQueueOptions>();
  private readonly queues = new Map<string, Queue>();
  private readonly workers: Worker<unknown>[] = [];

  constructor(
    private readonly root: DelayqRootOptions,
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
  ) {}

  /** The Queue of a registered queue, made once. */
  queue(options: RegisterQueueOptions): Queue {
    const { name, ...queueOptions } = options;
    let queue = this.queues.get(name);
    if (!queue) {
      this.registered.set(name, options);
      queue = new Queue(name, { connection: this.root.connection, ...queueOptions });
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** Start a Worker for every @Processor provider; resolves once all claim. Called by Nest. */
  async onApplicationBootstrap(): Promise<void> {
    try {
      for (const wrapper of this.discovery.getProviders()) {
        const instance = wrapper.instance as unknown;
        const metatype = wrapper.metatype;
        if (!instance || !metatype) continue;
        const meta = this.reflector.get<ProcessorMetadata | undefined>(PROCESSOR_METADATA, metatype);
        if (!meta) continue;
        const processor = instance as Partial<DelayqProcessor>;
        if (typeof processor.process !== 'function') {
          throw new TypeError(
            `@Processor('${meta.name}') class ${metatype.name} has no process(job) method: add one, it handles each job`,
          );
        }
        this.workers.push(this.startWorker(meta, processor as DelayqProcessor));
      }
      await Promise.all(this.workers.map((worker) => worker.waitUntilReady()));
    } catch (err) {
      // A failed bootstrap may never reach shutdown: leave no worker claiming behind it.
      await this.onModuleDestroy();
      throw err;
    }
  }

  /** Close every worker gracefully: no new claims, running jobs finish or are released. Called by Nest. */
  async onModuleDestroy(): Promise<void> {
    const timeoutMs = this.root.shutdownTimeoutMs ?? 10_000;
    await Promise.all(this.workers.splice(0).map((worker) => worker.close({ timeoutMs })));
  }

  /** Close the queues. Called by Nest, after every module's destroy hooks. */
  async onApplicationShutdown(): Promise<void> {
    const queues = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(queues.map((queue) => queue.close()));
  }

  private startWorker({ name, options }: ProcessorMetadata, processor: DelayqProcessor): Worker<unknown> {
    const shared: Partial<WorkerOptions<unknown>> = {};
    const registered = this.registered.get(name);
    for (const key of SHARED) {
      if (registered?.[key] !== undefined) Object.assign(shared, { [key]: registered[key] });
    }
    const worker = new Worker<unknown>(name, async (job) => processor.process(job), {
      connection: this.root.connection,
      ...shared,
      ...options,
    });
    // A Worker without an 'error' listener would throw from its emitter: report through Nest's logger.
    worker.on('error', (err) => this.logger.error(`worker of '${name}': ${err.message}`, err.stack));
    return worker;
  }
}
