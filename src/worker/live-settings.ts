/**
 * A worker following its queue's live settings (queue.configure): on a `G` wake message, or after
 * the subscription reconnects (when one may have been missed), it reads the settings again and,
 * when they changed, claims with the new group bounds from the next call on and puts back in turn
 * the groups the old bound held out; when the partition count grew (a re-partition), claims from
 * the new partitions too. One reading at a time; a message during one reads again.
 */
import type { QueueContext } from '../definition/context.js';
import { readLiveSettings } from '../operations/config-record.js';
import { DEFAULT_GROUP_CONCURRENCY } from '../operations/claim.js';
import { refreshGroups } from '../operations/group-refresh.js';
import type { ClaimSettings } from './storage.js';

/** The group bounds a claim sends. */
export type GroupSettings = NonNullable<ClaimSettings['groups']>;

/** What the follower needs from the worker. */
export interface LiveSettingsDeps {
  context: QueueContext;
  /** Whether the worker runs (started, its storage made, not closing): only then is there anything to follow. */
  running(): boolean;
  /** Claim (and fail, release, reap) with these bounds from now on (WorkerStorage.setGroups). */
  setGroups(groups: GroupSettings): void;
  /** The bounds changed: claim now, the groups put back in turn may have due jobs. */
  wake(): void;
  /** The queue was re-partitioned: the context's partition list grew; claim from the new ones too. */
  grow(): Promise<void>;
  log(message: string): void;
  report(err: unknown): void;
}

/** Reads the queue's live settings again when told to. */
export class LiveSettings {
  private following: Promise<void> = Promise.resolve();

  constructor(private readonly deps: LiveSettingsDeps) {}

  /** A `G` message or a reconnect: read the settings again (after the reading in progress). */
  follow(): void {
    if (!this.deps.running()) return;
    const previous = this.following;
    this.following = previous.then(() => this.read()).catch((err: unknown) => this.deps.report(err));
  }

  private async read(): Promise<void> {
    const { context } = this.deps;
    const client = context.client;
    const { record } = await context.settle();
    const live = await readLiveSettings(client, context.name);
    if (live.settingsVersion === record.settingsVersion) return;
    const count = context.partitions.length;
    const now = await context.adoptLive(live);
    if (context.partitions.length > count) {
      await this.deps.grow();
      this.deps.log(`partitions now ${context.partitions.length}, was ${count} (re-partitioned)`);
    }
    // A re-partition alone leaves the group bounds as they were: nothing more to change.
    if (JSON.stringify(now.groups) === JSON.stringify(record.groups)) {
      this.deps.wake();
      return;
    }
    const groups: GroupSettings = {
      concurrency: now.groups?.concurrency ?? DEFAULT_GROUP_CONCURRENCY,
      ...(now.groups?.limit && { limit: now.groups.limit }),
    };
    this.deps.setGroups(groups);
    this.deps.log(
      `group bounds now concurrency ${groups.concurrency}${groups.limit ? `, limit ${groups.limit.max} per ${groups.limit.perMs} ms` : ''} (queue.configure)`,
    );
    await Promise.all(context.partitions.map((keys) => refreshGroups(client, keys, groups.concurrency)));
    this.deps.wake();
  }
}
