/**
 * src/scripts/includes/place.lua through a real redis-server: a waiting job goes to s, p or r by
 * its header and due time, and unplace_waiting finds it there again from the header alone.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { encodeRecord, NEW_JOB_HEADER } from '../../src/record/index.js';
import { expandLua } from '../../src/redis/lua-source.js';
import { queueKeys } from '../../src/redis/keys.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';

const scriptsDir = fileURLToPath(new URL('../../src/scripts/', import.meta.url));
const probe = [
  expandLua(scriptsDir, 'includes/record.lua'),
  expandLua(scriptsDir, 'includes/place.lua'),
  readFileSync(new URL('./place-probe.lua', import.meta.url), 'utf8'),
].join('\n');

const TWO42 = 2 ** 42;
let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedis();
  client = new Redis(server.url);
});

afterAll(async () => {
  client.disconnect();
  await server.stop();
});

function keysOf(queue: string): [string, string, string] {
  const k = queueKeys(queue);
  return [k.waiting, k.prioWaiting, k.prioReady];
}

async function place(queue: string, id: string, prio: number, due: number, now: number): Promise<number> {
  const record = encodeRecord({ ...NEW_JOB_HEADER, priority: prio }, Buffer.from('{}'));
  return (await client.eval(probe, 3, ...keysOf(queue), 'place', id, record, due, now)) as number;
}

async function unplace(queue: string, id: string, prio: number): Promise<string | number> {
  const record = encodeRecord({ ...NEW_JOB_HEADER, priority: prio }, Buffer.from('{}'));
  return (await client.eval(probe, 3, ...keysOf(queue), 'unplace', id, record)) as string | number;
}

it('places by class and due time, and says when the job became the earliest', async () => {
  const [s, p, r] = keysOf('place-1');
  expect(await place('place-1', 'a', 0, 2000, 1000)).toBe(1);
  expect(await place('place-1', 'b', 0, 3000, 1000)).toBe(0);
  expect(await place('place-1', 'c', 0, 1500, 1000)).toBe(1);
  expect(await place('place-1', 'd', -5, 2500, 1000)).toBe(1);
  expect(await place('place-1', 'e', 7, 900, 1000)).toBe(1);
  expect(await client.zrange(s, 0, -1, 'WITHSCORES')).toStrictEqual(['c', '1500', 'a', '2000', 'b', '3000']);
  expect(await client.zrange(p, 0, -1, 'WITHSCORES')).toStrictEqual(['-5:d', '2500']);
  expect(await client.zrange(r, 0, -1, 'WITHSCORES')).toStrictEqual([
    '7:e',
    String((7 + 1024) * TWO42 + 900),
  ]);
});

it('unplaces from wherever the header says, giving the due time back', async () => {
  const [s, p, r] = keysOf('place-2');
  await place('place-2', 'a', 0, 2000, 1000);
  await place('place-2', 'd', -5, 2500, 1000);
  await place('place-2', 'e', 7, 900, 1000);
  expect(await unplace('place-2', 'a', 0)).toBe('2000');
  expect(await unplace('place-2', 'd', -5)).toBe('2500');
  expect(await unplace('place-2', 'e', 7)).toBe('900');
  expect(await unplace('place-2', 'e', 7)).toBe(-1);
  expect(await client.exists(s, p, r)).toBe(0);
});
