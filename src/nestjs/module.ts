/**
 * DelayqModule: forRoot() once (global: the connection and the lifecycle that owns queues and
 * workers), registerQueue() in each module that adds jobs or processes them.
 */
import type { DynamicModule, Provider } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, Reflector } from '@nestjs/core';
import { DelayqLifecycle, type DelayqRootOptions, type RegisterQueueOptions } from './lifecycle.js';
import { DELAYQ_LIFECYCLE, DELAYQ_ROOT_OPTIONS, getQueueToken } from './tokens.js';

/** The delayq module for NestJS. */
export class DelayqModule {
  /** Connect delayq once for the whole application (a global module). */
  static forRoot(options: DelayqRootOptions): DynamicModule {
    return {
      module: DelayqModule,
      global: true,
      imports: [DiscoveryModule],
      providers: [
        { provide: DELAYQ_ROOT_OPTIONS, useValue: options },
        {
          provide: DELAYQ_LIFECYCLE,
          useFactory: (root: DelayqRootOptions, discovery: DiscoveryService, reflector: Reflector) =>
            new DelayqLifecycle(root, discovery, reflector),
          inject: [DELAYQ_ROOT_OPTIONS, DiscoveryService, Reflector],
        },
      ],
      exports: [DELAYQ_ROOT_OPTIONS, DELAYQ_LIFECYCLE],
    };
  }

  /** Provide the Queue of each named queue, injected with @InjectQueue(name). */
  static registerQueue(...queues: RegisterQueueOptions[]): DynamicModule {
    const providers: Provider[] = queues.map((options) => ({
      provide: getQueueToken(options.name),
      useFactory: (lifecycle: DelayqLifecycle) => lifecycle.queue(options),
      inject: [DELAYQ_LIFECYCLE],
    }));
    return { module: DelayqModule, providers, exports: providers };
  }
}
