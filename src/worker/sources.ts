/**
 * The claim sources' factory, and the plain one: a queue's waiting sets (or one partition's),
 * claimed by claim.lua (ZPOPMIN or ZRANGE as the strategy says).
 */
import type { ClaimOutput } from '../operations/claim.js';
import type { ClaimSource, ClaimSourceContext } from './claim-source.js';
import { PartitionedSource } from './partitioned-source.js';
import { WheelSource } from './wheel-source.js';

/** The source for the strategy and layout the start-up handshake settled. */
export function claimSourceFor(ctx: ClaimSourceContext): ClaimSource {
  if (ctx.layout.kind === 'wheel') return new WheelSource(ctx);
  const schedules = ctx.partitions.map((_keys, p) => new ScheduleSource(ctx, p));
  if (schedules.length === 1) return schedules[0]!;
  return new PartitionedSource(schedules, ctx);
}

/** The waiting sets of one queue (or one partition), claimed through its exchange. */
export class ScheduleSource implements ClaimSource {
  constructor(
    private readonly ctx: Pick<ClaimSourceContext, 'claim' | 'sleeper'>,
    private readonly partition: number,
  ) {}

  claim(limit: number, ahead?: boolean): Promise<ClaimOutput> {
    return this.ctx.claim(this.partition, limit, ahead);
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
