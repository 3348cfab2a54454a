/** delayq for NestJS: DelayqModule, @InjectQueue(), @Processor(). */
export { DelayqModule } from './module.js';
export type { DelayqRootAsyncOptions } from './module.js';
export { InjectQueue, Processor } from './decorators.js';
export { DelayqLifecycle } from './lifecycle.js';
export type {
  DelayqProcessor,
  DelayqRootOptions,
  ProcessorMetadata,
  ProcessorOptions,
  RegisterQueueOptions,
} from './lifecycle.js';
export { getQueueToken } from './tokens.js';
