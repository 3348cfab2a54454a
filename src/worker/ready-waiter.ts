/**
 * The wheel strategy's wait for work: a blocking BLMOVE ready ready RIGHT RIGHT (BRPOPLPUSH where
 * BLMOVE is missing) on a connection of its own. Moving the tail of `ready` onto itself changes
 * nothing; it only returns as soon as `ready` holds a job, so a worker wakes the moment a job is
 * promoted or pushed there, without polling. The claim script then takes and leases in one atomic
 * step: there is no moment where a job is taken but not yet leased, so nothing to recover when a
 * worker dies.
 */
import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';

/** Blocks until the ready list holds a job, a timeout, or interrupt(). */
export class ReadyWaiter {
  private client: RedisClient | undefined;
  private clientId: number | null = null;
  private pending: Promise<boolean> | undefined;
  private stopped = false;

  constructor(
    private readonly source: RedisClient,
    private readonly readyKey: string,
    private readonly command: 'blmove' | 'brpoplpush',
    private readonly onError: (err: Error) => void,
  ) {}

  /** Open the blocking connection. */
  async start(): Promise<void> {
    await this.connect();
  }

  /** Wait up to `ms`; true when the ready list holds a job, false at the timeout, an interrupt or an error. */
  wait(ms: number): Promise<boolean> {
    this.pending = this.block(ms).finally(() => (this.pending = undefined));
    return this.pending;
  }

  /** End a wait in progress now (CLIENT UNBLOCK, or a new connection where that is not possible). */
  async interrupt(): Promise<void> {
    const pending = this.pending;
    if (!pending) return;
    const client = this.client;
    if (
      client &&
      !(client instanceof Cluster) &&
      this.clientId !== null &&
      !(this.source instanceof Cluster)
    ) {
      try {
        // 0: the connection was not blocked (yet). Its BLMOVE may still be on its way, and would
        // then block for its whole timeout (an hour with a long maxSleepMs: seen as a close() that
        // hung under load); dropping the connection ends it whatever it is doing.
        if (Number(await this.source.call('CLIENT', 'UNBLOCK', this.clientId)) === 1) {
          await pending;
          return;
        }
      } catch {
        // CLIENT UNBLOCK refused (ACL, old server): drop the connection instead.
      }
    }
    this.client = undefined;
    client?.disconnect();
    await pending;
  }

  /** Close the blocking connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.interrupt();
    const client = this.client;
    this.client = undefined;
    client?.disconnect();
  }

  private async connect(): Promise<RedisClient> {
    const client = this.source.duplicate();
    client.on('error', (err: Error) => this.onError(err));
    this.client = client;
    this.clientId = null;
    if (!(client instanceof Cluster)) {
      try {
        this.clientId = Number(await client.call('CLIENT', 'ID'));
      } catch {
        this.clientId = null;
      }
    }
    return client;
  }

  private async block(ms: number): Promise<boolean> {
    if (this.stopped) return false;
    try {
      const client = this.client ?? (await this.connect());
      const key = this.readyKey;
      // A little past the caller's own timer, which is the one that ends the wait.
      const seconds = (Math.max(1, ms) + 100) / 1000;
      const reply =
        this.command === 'blmove'
          ? await client.call('BLMOVE', key, key, 'RIGHT', 'RIGHT', seconds.toFixed(3))
          : await client.call('BRPOPLPUSH', key, key, Math.ceil(seconds));
      return reply !== null;
    } catch (err) {
      if (!this.stopped && this.client !== undefined)
        this.onError(err instanceof Error ? err : new Error(String(err)));
      return false;
    }
  }
}
