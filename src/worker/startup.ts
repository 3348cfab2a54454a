/**
 * The worker's start-up handshake: probe the server, choose the claim strategy and the layout, and
 * check them and the partition count against what the queue's producers recorded.
 */
import type { ServerClock } from '../clock.js';
import { checkLayout } from '../operations/layout.js';
import { layoutName, ZSET_LAYOUT, type Layout } from '../operations/wheel.js';
import {
  chooseStrategy,
  probeCapabilities,
  type Capabilities,
  type Strategy,
} from '../redis/capabilities.js';
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { checkPartitionCount } from '../partition/index.js';
import type { ResolvedWorkerOptions } from './options.js';

/** What the handshake settled. */
export interface Handshake {
  caps: Capabilities;
  strategy: Strategy;
  layout: Layout;
}

/** Run the handshake for queue `name`; the server clock is observed from the layout check. */
export async function handshake(
  client: RedisClient,
  name: string,
  options: ResolvedWorkerOptions<unknown>,
  partitions: readonly QueueKeys[],
  clock: ServerClock,
): Promise<Handshake> {
  const caps = await probeCapabilities(client);
  const strategy = chooseStrategy(options.strategy, caps);
  const layout: Layout =
    strategy === 'wheel' ? { kind: 'wheel', granularityMs: options.granularityMs, clock } : ZSET_LAYOUT;
  await checkPartitionCount(client, name, partitions.length);
  const settled = await Promise.all(
    partitions.map((keys) => checkLayout(client, keys, name, layoutName(layout))),
  );
  clock.observe(settled[0]!.now);
  return { caps, strategy, layout };
}
