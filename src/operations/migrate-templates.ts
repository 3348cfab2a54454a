/**
 * The `migrate-templates` operation (migrate-templates.lua): write repeating schedules' payload
 * templates re-encoded for layout 2, each with a compare-and-set on what was read.
 */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, str } from './reply.js';

/** One repeating schedule's template re-encoded, for migrate-templates.lua. */
export interface TemplateConversion {
  readonly name: string;
  readonly oldDefinition: string;
  readonly oldTemplate: Buffer;
  readonly definition: string;
  readonly template: Buffer;
}

/** Write re-encoded schedule templates; per schedule true when written, false when it changed since the read. */
export async function writeTemplates(
  client: RedisClient,
  keys: QueueKeys,
  conversions: readonly TemplateConversion[],
): Promise<boolean[]> {
  if (conversions.length === 0) return [];
  const reply = asArray(
    await runScript(
      client,
      script('migrate-templates'),
      [keys.schedules, keys.schedulePayloads],
      [
        conversions.length,
        ...conversions.flatMap((t) => [t.name, t.oldDefinition, t.oldTemplate, t.definition, t.template]),
      ],
    ),
    'migrate-templates',
  );
  return conversions.map((_, i) => str(reply, i, 'migrate-templates') === 'ok');
}
