/**
 * Delivery of flow children that ended in another queue than their parent's (one Redis only,
 * README "Flows"): the scripts that end such a child have only its own queue's keys, so they leave
 * an outbox entry in its queue and publish `F <parent's queue> <child>` on its wake channel
 * (src/scripts/includes/flow.lua). The child queue's workers deliver on that message
 * (flow-deliver.lua, exactly once whoever calls it), and sweep the outbox (flow-outbox.lua) at
 * start, after a reconnect and with each periodic trim, as does a Queue's cancel: a message no
 * one heard, or a worker stopped between the ack and the delivery, leaves an entry the next sweep
 * delivers.
 */
import { Cluster } from 'ioredis';
import { readFlowPeer } from '../operations/config-record.js';
import { flowDeliver, type DeliverOutcome } from '../operations/flow-deliver.js';
import { flowOutbox } from '../operations/flow-outbox.js';
import { UNKNOWN_GROUP_CONCURRENCY } from '../operations/waiting-keys.js';
import type { RedisClient } from '../redis/connection.js';
import { queueKeys, type QueueKeys } from '../redis/keys.js';

/** Fields scanned per page of a sweep, and pages per sweep: a sweep's cost stays bounded. */
const SWEEP_COUNT = 100;
const SWEEP_PAGES = 10;

/** Delivers the outbox of one queue (the children's queue). */
export class FlowCourier {
  /** Where the scan of the outbox goes on: a large flow hash is swept a bounded part at a time. */
  private cursor = '0';
  private sweeping: Promise<number> | undefined;

  constructor(
    private readonly client: RedisClient,
    /** The children's queue. */
    private readonly name: string,
    /** Its keys (flows live in the queue's own, unpartitioned keys). */
    private readonly keys: () => QueueKeys,
  ) {}

  /** Deliver child `childId`'s outbox entry to its parent in `parentQueue` (no-op when delivered). */
  async deliver(parentQueue: string, childId: string): Promise<DeliverOutcome> {
    // On a Cluster no flow spans two queues (addFlow refuses it): there is never an entry.
    if (this.client instanceof Cluster) return null;
    const parent = (await readFlowPeer(this.client, parentQueue)) ?? {
      name: parentQueue,
      keys: queueKeys(parentQueue),
      eventsCap: 0,
      groupConcurrency: UNKNOWN_GROUP_CONCURRENCY,
    };
    return flowDeliver(this.client, { childId, child: { name: this.name, keys: this.keys() }, parent });
  }

  /** Deliver the entries of a bounded part of the outbox; resolves to how many were found. */
  sweep(): Promise<number> {
    if (this.client instanceof Cluster) return Promise.resolve(0);
    this.sweeping ??= this.sweepPages().finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  private async sweepPages(): Promise<number> {
    let found = 0;
    for (let page = 0; page < SWEEP_PAGES; page++) {
      const out = await flowOutbox(this.client, this.keys(), this.cursor, SWEEP_COUNT);
      this.cursor = out.cursor;
      for (const entry of out.entries) {
        // No parent queue: the entry's link is gone; delivering drops it.
        await this.deliver(entry.parentQueue || this.name, entry.childId);
        found++;
      }
      if (out.cursor === '0') break;
    }
    return found;
  }
}
