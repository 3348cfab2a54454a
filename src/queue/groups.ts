/**
 * `queue.groups`: the groups of a queue, seen and operated (issue 29). A group lives in one
 * partition (its name places it: src/partition/index.ts placementOf), so each operation on one
 * group is one partition's; the list merges every partition's page.
 */
import { ValidationError } from '../errors.js';
import { validateGroup } from '../job-options.js';
import { cancelGroupChunk, GROUP_CANCEL_CHUNK } from '../operations/group-cancel.js';
import { pauseGroup } from '../operations/group-pause.js';
import { resumeGroup } from '../operations/group-resume.js';
import { listGroups, type GroupInfo } from '../operations/groups-list.js';
import { partitionOf } from '../partition/index.js';
import { DEFAULT_GROUP_CONCURRENCY } from '../operations/claim.js';
import { readLiveSettings } from '../operations/config-record.js';
import type { QueueKeys } from '../redis/keys.js';
import type { Producer } from '../definition/producer.js';
import { checkPage } from './reads.js';

export type { GroupInfo } from '../operations/groups-list.js';

/** Operations on a queue's groups (`queue.groups`). */
export class QueueGroups {
  /** @internal Reached as `queue.groups`. */
  constructor(private readonly producer: Producer<unknown>) {}

  /**
   * A page of the queue's groups, the biggest backlog (waiting jobs) first, each with its waiting,
   * due and running jobs and whether it is paused; after the groups with waiting jobs come those
   * with only running jobs or a pause. Reads one count per group, never a group's jobs: O(log G +
   * limit) per partition for pages within the groups with waiting jobs.
   */
  async list(page: { offset?: number; limit?: number } = {}): Promise<GroupInfo[]> {
    this.producer.assertOpen();
    assertPageKeys(page);
    const { offset, limit } = checkPage(page);
    const ctx = this.producer.context;
    await ctx.settle();
    if (ctx.partitions.length === 1) {
      return (await listGroups(ctx.client, ctx.keys, { offset, limit })).groups;
    }
    const pages = await Promise.all(
      ctx.partitions.map((keys) => listGroups(ctx.client, keys, { offset: 0, limit: offset + limit })),
    );
    return pages
      .flatMap((p) => p.groups)
      .sort(byBacklog)
      .slice(offset, offset + limit);
  }

  /**
   * Keep every worker of the queue from starting jobs of `group` until resume(group): its running
   * jobs finish, its waiting jobs stay (and can be listed or cancelled), other groups go on. True
   * when this call paused it, false when it was paused already. Throws ValidationError for a name
   * no job could have.
   */
  async pause(group: string): Promise<boolean> {
    const { keys } = await this.open(group);
    return pauseGroup(this.producer.context.client, keys, group);
  }

  /**
   * Let workers start jobs of `group` again; sleeping workers are woken by the wake channel when it
   * has a due job. True when it was paused, false when it was not.
   */
  async resume(group: string): Promise<boolean> {
    const { keys, concurrency } = await this.open(group);
    return resumeGroup(this.producer.context.client, keys, group, concurrency);
  }

  /**
   * Cancel every waiting job of `group` and return how many were cancelled; running jobs go on
   * (cancel one with queue.cancel(id)). Done in chunks of 500, earliest first, each one atomic, so
   * a big group never holds Redis for long. A job added to the group while this runs is cancelled
   * when it waits among the group's earliest when a later chunk is taken; the call takes no more
   * chunks than the group had jobs when it began (plus one), so a producer that keeps adding
   * cannot keep it going, and such a job may be left waiting.
   */
  async cancel(group: string): Promise<number> {
    const { keys, eventsCap } = await this.open(group);
    const client = this.producer.context.client;
    let total = 0;
    let chunks = 0;
    let allowed = 1;
    while (chunks < allowed) {
      const { cancelled, left } = await cancelGroupChunk(client, keys, {
        group,
        max: GROUP_CANCEL_CHUNK,
        eventsCap,
      });
      if (chunks === 0) allowed = Math.ceil((cancelled + left) / GROUP_CANCEL_CHUNK) + 1;
      chunks += 1;
      total += cancelled;
      if (left === 0) break;
    }
    return total;
  }

  /**
   * The queue's group bounds as recorded now (queue.configure changes them): running jobs per
   * group across all workers, and the rate limit per group (null: none). Before any worker or
   * configure() recorded them, concurrency is the default, 1.
   */
  async bounds(): Promise<{ concurrency: number; limit: { max: number; perMs: number } | null }> {
    this.producer.assertOpen();
    const ctx = this.producer.context;
    await ctx.settle();
    const { groups } = await readLiveSettings(ctx.client, ctx.name);
    return { concurrency: groups?.concurrency ?? DEFAULT_GROUP_CONCURRENCY, limit: groups?.limit ?? null };
  }

  private async open(
    group: unknown,
  ): Promise<{ keys: QueueKeys; eventsCap: number; concurrency: number | undefined }> {
    this.producer.assertOpen();
    const name = validateGroup(group);
    const ctx = this.producer.context;
    const { eventsCap } = await ctx.settle();
    return {
      keys: ctx.partitions[partitionOf(name, ctx.partitionsBase)]!,
      eventsCap,
      // Read now, not settled: it is live (queue.configure), and resume puts the group in turn by it.
      concurrency: (await readLiveSettings(ctx.client, ctx.name)).groups?.concurrency,
    };
  }
}

/** The order of queue.groups.list(): most waiting first; ties as Redis orders them per partition. */
function byBacklog(a: GroupInfo, b: GroupInfo): number {
  if (a.waiting !== b.waiting) return b.waiting - a.waiting;
  const byName = Buffer.compare(Buffer.from(a.group), Buffer.from(b.group));
  // Groups with waiting jobs tie by name descending (ZREVRANGE), the others ascending.
  return a.waiting > 0 ? -byName : byName;
}

const PAGE_KEYS = ['offset', 'limit'];

function assertPageKeys(page: object): void {
  for (const key of Object.keys(page)) {
    if (!PAGE_KEYS.includes(key)) {
      throw new ValidationError(
        `unknown groups.list option '${key}'; known options: ${PAGE_KEYS.join(', ')}`,
        key,
      );
    }
  }
}
