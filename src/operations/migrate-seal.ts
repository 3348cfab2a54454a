/**
 * The `migrate-seal` operation (migrate-seal.lua): close one partition once its layout-1 job keys
 * are empty.
 */
import type { RedisClient } from '../redis/connection.js';
import { legacyWheelBucketKey } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { legacyJobKeys, type PartitionKeys } from './migrate-keys.js';
import { asArray, num, str } from './reply.js';

/** migrate-seal's answer: sealed, or the layout-1 key that still holds entries. */
export type Sealed =
  { readonly sealed: true } | { readonly sealed: false; readonly key: string; readonly entries: number };

/** Close one partition once its layout-1 job keys are empty (migrate-seal.lua). */
export async function sealPartition(client: RedisClient, keys: PartitionKeys): Promise<Sealed> {
  const o = keys.old;
  const c = keys.current;
  // A layout-1 wheel queue's bucket lists, by the index that names them.
  const buckets = (await client.zrange(o.wheel, 0, -1)).map((start) =>
    legacyWheelBucketKey(o, Number(start)),
  );
  const reply = asArray(
    await runScript(
      client,
      script('migrate-seal'),
      [
        ...legacyJobKeys(o),
        o.token,
        o.layout,
        o.events,
        c.events,
        c.waiting,
        c.wake,
        o.limiter,
        o.ready,
        o.wheel,
        o.wheelCount,
        ...buckets,
      ],
      [],
    ),
    'migrate-seal',
  );
  if (str(reply, 0, 'migrate-seal') === 'sealed') return { sealed: true };
  return { sealed: false, key: str(reply, 1, 'migrate-seal'), entries: num(reply, 2, 'migrate-seal') };
}
