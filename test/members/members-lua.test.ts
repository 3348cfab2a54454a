/**
 * The Lua side of the member formats (src/scripts/includes/record.lua, groups.lua, place.lua)
 * through a real redis-server, against the vectors test/fixtures/wire-members.json shares with
 * src/members/ (members.test.ts): what the scripts build is the vector's member, and what they read
 * from the vector's member is its parts.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandLua } from '../../src/redis/lua-source.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { loadMemberVectors } from './vectors.js';

const scriptsDir = fileURLToPath(new URL('../../src/scripts/', import.meta.url));
const probe = [
  expandLua(scriptsDir, 'includes/record.lua'),
  expandLua(scriptsDir, 'includes/place.lua'),
  readFileSync(new URL('./members-probe.lua', import.meta.url), 'utf8'),
].join('\n');

const vectors = loadMemberVectors();
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

async function run(...args: Array<string | number | Buffer>): Promise<Buffer[]> {
  return (await client.callBuffer('EVAL', probe, 0, ...args)) as Buffer[];
}

describe('lease member (record.lua)', () => {
  it.each(vectors.lease)('$member', async (v) => {
    const reply = await run('lease', v.claims, v.claimedAt, v.id, v.group ?? '-', v.member);
    const [built, id, token, group, idOfPair, groupOfPair] = reply.map((b) => b.toString('utf8'));
    expect(built).toBe(v.member);
    expect(id).toBe(v.id);
    expect(token).toBe(`${v.claims}.${v.claimedAt}`);
    expect(group).toBe(v.group ?? '-');
    expect([idOfPair, groupOfPair]).toStrictEqual([v.id, v.group ?? '-']);
  });
});

describe('group member (groups.lua)', () => {
  it.each(vectors.group)('$group $due $id', async (v) => {
    const member = Buffer.from(v.memberHex, 'hex');
    const [built, due, id] = await run('group', v.group, v.due, v.id, member);
    expect(built!.toString('hex')).toBe(v.memberHex);
    expect(Number(due!.toString())).toBe(v.due);
    expect(id!.toString('utf8')).toBe(v.id);
  });
});

describe('priority member (place.lua)', () => {
  it.each(vectors.priority)('$member', async (v) => {
    const [built, id] = await run('priority', v.priority, v.id, v.member);
    expect(built!.toString('utf8')).toBe(v.member);
    expect(id!.toString('utf8')).toBe(v.id);
  });
});
