/**
 * Listens on a queue's wake channel on its own connection. One of a worker's two wake-up sources;
 * the other is its own timer, so a wedged subscription delays jobs by at most one timer period.
 */
import { Cluster } from 'ioredis';
import type { RedisClient } from './connection.js';

/** The wake message that tells workers the live settings changed (queue.configure publishes it). */
export const SETTINGS_MESSAGE = 'G';

/**
 * A subscription to one channel or several (the partitions of a queue) on one connection that calls
 * `onWake(due, i)` for each wake message on channel i, and `onWake(null, null)` after reconnects.
 * On a Cluster, a PUBLISH (made by a script on the queue's master) reaches every node, so the
 * subscription may sit on any node, master or replica.
 */
export class WakeSubscriber {
  private client: RedisClient | undefined;
  private channels: readonly string[];

  constructor(
    private readonly source: RedisClient,
    channel: string | readonly string[],
    private readonly onWake: (due: number | null, channel: number | null) => void,
    private readonly onError: (err: Error) => void,
    /** `C <lease member>`: the running job held by that lease member was cancelled (issue 15). */
    private readonly onCancel: (leaseMember: string) => void = () => {},
    /**
     * `G`: the queue's live settings changed (queue.configure); also called after a reconnect,
     * when such a message may have been missed.
     */
    private readonly onSettings: () => void = () => {},
    /**
     * `F <parent's queue> <child>`: a flow child of this queue ended while its parent is in
     * another queue (flow.lua's outbox); null after a reconnect, when such a message may have
     * been missed (sweep the outbox).
     */
    private readonly onFlow: (entry: { parentQueue: string; childId: string } | null) => void = () => {},
  ) {
    this.channels = typeof channel === 'string' ? [channel] : channel;
  }

  /** Connect and subscribe; resolves once subscribed. */
  async start(): Promise<void> {
    const client = this.source.duplicate();
    this.client = client;
    client.on('error', (err: Error) => this.onError(err));
    client.on('message', (channel: string, message: string) => {
      // `<due ms>`: the head moved earlier. `P` (paused) and `R <head>` (resumed) give no number,
      // so they mean "claim now": a paused claim answers paused and the worker sleeps until the
      // resume; after `R` the claim takes what fell due during the pause.
      if (message.startsWith('C ')) {
        // Not a reason to claim: it names one running job, whose holder aborts it.
        this.onCancel(message.slice(2));
        return;
      }
      if (message.startsWith('F ')) {
        // Not a reason to claim: a delivery to a parent in another queue (queue names hold no space).
        const space = message.indexOf(' ', 2);
        if (space > 2)
          this.onFlow({ parentQueue: message.slice(2, space), childId: message.slice(space + 1) });
        return;
      }
      if (message === SETTINGS_MESSAGE) {
        // Not a reason to claim by itself: the worker reads the settings, then claims.
        this.onSettings();
        return;
      }
      const due = Number(message);
      const index = this.channels.indexOf(channel);
      this.onWake(Number.isFinite(due) ? due : null, index < 0 ? null : index);
    });
    let subscribedOnce = false;
    // Messages published while the subscription was down are gone: after a reconnect, look again.
    client.on('ready', () => {
      if (!subscribedOnce) return;
      this.onWake(null, null);
      this.onSettings();
      this.onFlow(null);
    });
    // A Cluster moves its subscription to another node by itself when that node goes, without a
    // 'ready': a change in the node list (a failover) is the sign to look again.
    if (client instanceof Cluster) {
      for (const event of ['+node', '-node'] as const) {
        client.on(event, () => {
          if (subscribedOnce) this.onWake(null, null);
        });
      }
    }
    // Plain (not sharded) channels have no slot: one SUBSCRIBE of all of them is fine on a Cluster.
    await client.subscribe(...this.channels);
    subscribedOnce = true;
  }

  /**
   * Listen on `channels` from now on, the ones listened on before among them (a re-partitioned
   * queue's partitions, grown): the new ones are subscribed at once when started, else at start.
   */
  async follow(channels: readonly string[]): Promise<void> {
    const added = channels.filter((channel) => !this.channels.includes(channel));
    this.channels = [...channels];
    if (added.length > 0 && this.client) await this.client.subscribe(...added);
  }

  /** Unsubscribe and close. */
  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      await client.quit();
    } catch {
      client.disconnect();
    }
  }
}
