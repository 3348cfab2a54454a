/**
 * DelayqModule: forRoot() once (global: the connection and the lifecycle that owns queues and
 * workers), registerQueue() in each module that adds jobs or processes them.
 */
import type { DynamicModule, FactoryProvider, ModuleMetadata, Provider } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, Reflector } from '@nestjs/core';
import { DelayqLifecycle, type DelayqRootOptions, type RegisterQueueOptions } from './lifecycle.js';
import { DELAYQ_LIFECYCLE, DELAYQ_ROOT_OPTIONS, getQueueToken } from './tokens.js';

/** Options of DelayqModule.forRootAsync(): the root options made by a factory from other providers. */
export interface DelayqRootAsyncOptions {
  /** Modules whose providers the factory needs (e.g. ConfigModule). */
  imports?: ModuleMetadata['imports'];
  /** Tokens of the providers passed to useFactory, in order (e.g. [ConfigService]). */
  inject?: FactoryProvider['inject'];
  useFactory: (...args: never[]) => DelayqRootOptions | Promise<DelayqRootOptions>;
}

const lifecycleProvider: Provider = {
  provide: DELAYQ_LIFECYCLE,
  useFactory: (root: DelayqRootOptions, discovery: DiscoveryService, reflector: Reflector) =>
    new DelayqLifecycle(root, discovery, reflector),
  inject: [DELAYQ_ROOT_OPTIONS, DiscoveryService, Reflector],
};

/** The delayq module for NestJS. */
export class DelayqModule {
  /** Connect delayq once for the whole application (a global module). */
  static forRoot(options: DelayqRootOptions): DynamicModule {
    return DelayqModule.root([], { provide: DELAYQ_ROOT_OPTIONS, useValue: options });
  }

  /** forRoot() with options from a factory, e.g. `inject: [ConfigService]`. */
  static forRootAsync(options: DelayqRootAsyncOptions): DynamicModule {
    return DelayqModule.root(options.imports ?? [], {
      provide: DELAYQ_ROOT_OPTIONS,
      useFactory: options.useFactory,
      inject: options.inject ?? [],
    });
  }

  private static root(imports: NonNullable<ModuleMetadata['imports']>, rootOptions: Provider): DynamicModule {
    return {
      module: DelayqModule,
      global: true,
      imports: [DiscoveryModule, ...imports],
      providers: [rootOptions, lifecycleProvider],
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
