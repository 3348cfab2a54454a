import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../testing/redis-server.js';
import { ReadyWaiter } from './ready-waiter.js';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server.stop();
});

it('an interrupt ends a wait whose BLMOVE reaches Redis after the CLIENT UNBLOCK', async () => {
  const client = new Redis(server.url);
  const waiter = new ReadyWaiter(client, 'rw:ready', 'blmove', (err) => {
    throw err;
  });
  await waiter.start();
  // Hold the blocking connection's writes: its BLMOVE stays in the socket while the interrupt's
  // CLIENT UNBLOCK (on the other connection) finds nothing blocked. A BLMOVE let through after
  // that would block for the whole hour.
  const blocking = (waiter as unknown as { client: Redis }).client;
  blocking.stream.cork();
  const waited = waiter.wait(3_600_000);
  const interrupted = waiter.interrupt().then(() => 'interrupted');
  setTimeout(() => blocking.stream.uncork(), 50);
  const outcome = await Promise.race([
    interrupted,
    new Promise((resolve) => setTimeout(() => resolve('still waiting after 3 s'), 3_000)),
  ]);
  expect(outcome).toBe('interrupted');
  expect(await waited).toBe(false);
  await waiter.stop();
  client.disconnect();
});
