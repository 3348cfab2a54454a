/**
 * The decorators of delayq/nestjs. They are plain functions over Nest's own (Inject, Injectable,
 * SetMetadata): delayq is compiled without experimentalDecorators, only the application's code
 * that applies them needs it.
 */
import { applyDecorators, Inject, Injectable, SetMetadata } from '@nestjs/common';
import type { ProcessorMetadata, ProcessorOptions } from './lifecycle.js';
import { getQueueToken, PROCESSOR_METADATA } from './tokens.js';

/** Inject the Queue of `name`, registered with DelayqModule.registerQueue({ name }). */
export function InjectQueue(name: string): PropertyDecorator & ParameterDecorator {
  return Inject(getQueueToken(name));
}

/**
 * Mark a provider class as the processor of queue `name`: its `process(job)` method is the
 * handler of a Worker that starts on application bootstrap and closes gracefully on shutdown.
 * `options` are Worker options (concurrency, leaseMs, ...); the connection and the queue's
 * registered codec, strategy and partitions are taken from the module unless given here.
 */
export function Processor(name: string, options: ProcessorOptions = {}): ClassDecorator {
  const metadata: ProcessorMetadata = { name, options };
  return applyDecorators(SetMetadata(PROCESSOR_METADATA, metadata), Injectable());
}
