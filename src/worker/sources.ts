/**
 * The claim sources' factory, and the plain one: a queue's schedule ZSET (or one partition's),
 * claimed with ZPOPMIN or ZRANGEBYSCORE as the strategy says.
 */
import { claim, type ClaimOutput } from '../operations/claim.js';
import { ZSET_LAYOUT } from '../operations/wheel.js';
import type { QueueKeys } from '../redis/keys.js';
import type { ClaimSource, ClaimSourceContext } from './claim-source.js';
import { PartitionedSource } from './partitioned-source.js';
import { WheelSource } from './wheel-source.js';

/** The source for the strategy and layout the start-up handshake settled. */
export function claimSourceFor(ctx: ClaimSourceContext): ClaimSource {
  if (ctx.layout.kind === 'wheel') return new WheelSource(ctx, ctx.layout);
  const schedules = ctx.partitions.map((keys) => new ScheduleSource(ctx, keys));
  if (schedules.length === 1) return schedules[0]!;
  return new PartitionedSource(schedules, ctx);
}

/** The schedule ZSET of one queue (or one partition): claimed with ZPOPMIN or ZRANGEBYSCORE. */
export class ScheduleSource implements ClaimSource {
  constructor(
    private readonly ctx: Pick<ClaimSourceContext, 'client' | 'strategy' | 'settings' | 'sleeper'>,
    private readonly keys: QueueKeys,
  ) {}

  claim(limit: number): Promise<ClaimOutput> {
    const { client, strategy, settings } = this.ctx;
    return claim(client, this.keys, { ...settings, strategy, limit, layout: ZSET_LAYOUT });
  }

  pause(ms: number, approach?: boolean): Promise<void> {
    return this.ctx.sleeper.sleep(ms, approach);
  }

  woken(): void {
    // One schedule: the sleeper's wake-up is all there is to do.
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}
}
