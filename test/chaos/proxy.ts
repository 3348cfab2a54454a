/**
 * A TCP proxy between one worker process and Redis that can fail on command: stall (hold every
 * byte both ways for a while, as a partition that heals: nothing is lost, all of it arrives late)
 * or reset (RST both sides of every connection at once, as a dropped link).
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

interface Pair {
  client: Socket;
  upstream: Socket;
}

/** Forward `from` to `to`, holding chunks while `held()` is true. */
function forward(from: Socket, to: Socket, held: () => boolean, queue: Buffer[]): void {
  from.on('data', (chunk: Buffer) => {
    if (held() || queue.length > 0) queue.push(chunk);
    else to.write(chunk);
  });
}

/** A proxy to `target` on a free loopback port. */
export class FaultProxy {
  private readonly server: Server;
  private readonly pairs = new Set<Pair>();
  private stalledUntil = 0;
  private stallTimer: NodeJS.Timeout | undefined;
  private readonly flushers = new Set<() => void>();
  /** Connections accepted so far (a reconnecting client shows up here). */
  accepted = 0;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = createServer((client) => this.accept(client));
  }

  /** Start listening; resolves to the port. */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        const address = this.server.address();
        resolve(typeof address === 'object' && address ? address.port : 0);
      });
    });
  }

  /** The redis:// URL clients should use. */
  url(port: number): string {
    return `redis://127.0.0.1:${port}`;
  }

  private stalled(): boolean {
    return Date.now() < this.stalledUntil;
  }

  private accept(client: Socket): void {
    this.accepted++;
    client.setNoDelay(true);
    const upstream = createConnection({ host: this.target.host, port: this.target.port });
    upstream.setNoDelay(true);
    const pair: Pair = { client, upstream };
    this.pairs.add(pair);
    const toUpstream: Buffer[] = [];
    const toClient: Buffer[] = [];
    const flush = (): void => {
      if (this.stalled()) return;
      for (const chunk of toUpstream.splice(0)) if (!upstream.destroyed) upstream.write(chunk);
      for (const chunk of toClient.splice(0)) if (!client.destroyed) client.write(chunk);
    };
    this.flushers.add(flush);
    forward(client, upstream, () => this.stalled() || upstream.connecting, toUpstream);
    forward(upstream, client, () => this.stalled(), toClient);
    upstream.once('connect', flush);
    const close = (): void => {
      this.flushers.delete(flush);
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', close);
    client.on('close', close);
    upstream.on('close', close);
  }

  /** Hold all traffic, both ways, on every connection (and new ones) for `ms`. */
  stall(ms: number): void {
    this.stalledUntil = Math.max(this.stalledUntil, Date.now() + ms);
    clearTimeout(this.stallTimer);
    this.stallTimer = setTimeout(() => this.heal(), this.stalledUntil - Date.now());
  }

  /** End a stall now and deliver what was held. */
  heal(): void {
    clearTimeout(this.stallTimer);
    this.stalledUntil = 0;
    for (const flush of this.flushers) flush();
  }

  /** Reset every connection (RST to both ends). Clients reconnect through the proxy. */
  reset(): number {
    const pairs = [...this.pairs];
    for (const { client, upstream } of pairs) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    return pairs.length;
  }

  /** Stop accepting, reset what is open, and close. */
  async close(): Promise<void> {
    this.heal();
    this.reset();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
