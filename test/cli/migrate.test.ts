/**
 * `delayq migrate <queue>` as a person runs it: it stops when a delayq 0.1 worker seems at work and
 * says how to go on, a dry run only reports, and a migration prints its progress and what it did.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { configKey, legacyKeys, partitionKeys } from '../../src/redis/keys.js';
import { Layout1Queue } from '../fixtures/layout1/index.js';
import { inspector, uniqueQueue, useRedis } from '../support/fixtures.js';
import { buildOnce, runCli } from './run-cli.js';

const redis = useRedis();
let c: Redis;
beforeAll(async () => {
  c = inspector(redis.url());
  await buildOnce();
}, 120_000);
afterAll(async () => {
  await c.quit();
});
vi.setConfig({ testTimeout: 60_000 });

const cli = (args: string[]) => runCli(args, { redisUrl: redis.url() });

it('refuses while a 0.1 lease is valid, reports a dry run, then converts with --yes', async () => {
  const name = uniqueQueue('cli-mig');
  const old = new Layout1Queue(c, name);
  await old.record();
  await old.add('later', { n: 1 }, { delayMs: 3_600_000 });
  await old.add('running', { n: 2 });
  await old.claim('running', 1, 3_600_000);

  const refused = await cli(['migrate', name]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/1 job is running under a valid lease.*--yes/);
  expect(await c.hget(configKey(name), 'format')).toBe('1');

  const dry = await cli(['migrate', name, '--dry-run']);
  expect(dry.code).toBe(0);
  expect(dry.stdout).toContain(`would convert queue '${name}' (1 partition): 1 waiting, 1 active, 0 dead`);
  expect(await c.zcard(legacyKeys(name).schedule)).toBe(1);

  const done = await cli(['migrate', name, '--yes']);
  expect(done.code).toBe(0);
  expect(done.stdout).toContain(`converted queue '${name}' (1 partition): 1 waiting, 1 active, 0 dead`);
  expect(done.stderr).toMatch(/schedule: \d+ \/ \d+ jobs/);
  expect(await c.hget(configKey(name), 'format')).toBe('2');
  expect(await c.zcard(partitionKeys(name, 1)[0]!.waiting)).toBe(1);

  const again = await cli(['migrate', name, '--json']);
  expect(again.code).toBe(0);
  expect(JSON.parse(again.stdout.trim())).toMatchObject({ queue: name, status: 'already' });
});
