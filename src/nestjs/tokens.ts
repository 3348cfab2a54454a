/** The injection tokens and metadata keys of delayq/nestjs, in one place. */

/** Token of the options given to DelayqModule.forRoot(). */
export const DELAYQ_ROOT_OPTIONS = Symbol('delayq:root-options');

/** Token of the lifecycle service that owns every Queue and Worker the module made. */
export const DELAYQ_LIFECYCLE = Symbol('delayq:lifecycle');

/** Metadata key @Processor() sets on its class. */
export const PROCESSOR_METADATA = 'delayq:processor';

/** The injection token of queue `name`'s Queue: what @InjectQueue(name) injects. */
export function getQueueToken(name: string): string {
  return `delayq:queue:${name}`;
}
