/**
 * The queues a dashboard shows, each opened once as an Inspector on one Redis client: the client
 * it was given or one it connects on first use (and closes with the dashboard).
 */
import { Redis } from 'ioredis';
import type { Codec } from '../codec/codec.js';
import { UnknownQueueError } from '../errors.js';
import { discoverQueues } from '../inspect/discover.js';
import { Inspector } from '../inspect/inspector.js';
import type { RedisClient } from '../redis/connection.js';
import { assertQueueName } from '../redis/keys.js';
import { HttpError } from './exchange.js';

/** The dashboard's Redis client and its open queues. */
export class DashboardQueues {
  private client: RedisClient | undefined;
  private readonly ownsClient: boolean;
  private readonly fixed: ReadonlySet<string> | null;
  // Opening a queue reads its config record, once; a failed read is not kept.
  private readonly open = new Map<string, Promise<Inspector>>();

  /**
   * `connection`: a URL or a client (left open by close()); `queues`: the only queues shown, or
   * undefined for every queue SCAN finds; `codecs`: the codecs of queues whose codec is not built in.
   */
  constructor(
    private readonly connection: string | RedisClient | undefined,
    queues: readonly string[] | undefined,
    private readonly codecs: readonly Codec[],
  ) {
    queues?.forEach((name) => assertQueueName(name));
    this.fixed = queues ? new Set(queues) : null;
    this.ownsClient = typeof connection !== 'object';
    this.client = typeof connection === 'object' ? connection : undefined;
  }

  /** The Redis client, connected on first use when the dashboard was given a URL or nothing. */
  redis(): RedisClient {
    if (!this.client) {
      const url =
        (this.connection as string | undefined) ?? process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
      this.client = new Redis(url, { maxRetriesPerRequest: 2 });
      this.client.on('error', () => {
        // Reported per request as a 503; ioredis reconnects by itself.
      });
    }
    return this.client;
  }

  /** The names to list: the fixed ones, else those SCAN finds. */
  async names(): Promise<string[]> {
    return this.fixed ? [...this.fixed] : discoverQueues(this.redis(), 1000);
  }

  /** The queue `name`, opened once; a 404 HttpError for a queue not shown or not found, 400 for a bad name. */
  async get(name: string): Promise<Inspector> {
    if (this.fixed && !this.fixed.has(name)) throw new HttpError(404, `no queue '${name}' on this dashboard`);
    try {
      assertQueueName(name);
    } catch (err) {
      throw new HttpError(400, (err as Error).message);
    }
    let queue = this.open.get(name);
    if (!queue) {
      queue = Inspector.open(this.redis(), name, {
        codecs: this.codecs,
        codecHint:
          'give the dashboard that codec (createDashboard({ codec }), or delayq dashboard --codec-module)',
      }).catch((err: unknown) => {
        this.open.delete(name);
        throw err instanceof UnknownQueueError ? new HttpError(404, err.message) : err;
      });
      this.open.set(name, queue);
    }
    return queue;
  }

  /** Close the open queues, and the client when the dashboard created it. */
  async close(): Promise<void> {
    await Promise.all(
      [...this.open.values()].map((q) =>
        q.then(
          (queue) => queue.close(),
          () => {},
        ),
      ),
    );
    this.open.clear();
    if (this.client && this.ownsClient) {
      try {
        await this.client.quit();
      } catch {
        this.client.disconnect();
      }
    }
  }
}
