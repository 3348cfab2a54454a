/**
 * docs/PROTOCOL.md is enough for a producer in another language: a job added with nothing but
 * redis-cli, following the document, is run by a Worker with its payload intact.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { Worker } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { expandLua } from '../../src/redis/lua-source.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const run = promisify(execFile);
const redis = useRedis();
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

it('a job added with redis-cli --eval add.lua, as the protocol document says, is run by a Worker', async () => {
  const name = uniqueQueue('cli');
  const keys = queueKeys(name);
  // The build ships this exact expansion as dist/scripts/add.lua.
  const dir = await mkdtemp(join(tmpdir(), 'delayq-protocol-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const addLua = join(dir, 'add.lua');
  await writeFile(addLua, expandLua(join(import.meta.dirname, '../../src/scripts'), 'add.lua'));

  const envelope = JSON.stringify({
    v: 1,
    id: 'from-cli',
    version: 1,
    createdAt: 1767225600000,
    payload: {
      to: 'ada@example.com',
      when: { '~t': 'Date', v: '2026-01-02T03:04:05.006Z' },
      '~~note': 'tilde key',
    },
  });
  const port = String(redis.server().port);
  const { stdout } = await run('redis-cli', [
    '-p',
    port,
    '--eval',
    addLua,
    keys.schedule,
    keys.jobs,
    keys.meta,
    keys.wake,
    keys.events,
    keys.done,
    ',',
    '1',
    'from-cli',
    'd',
    '150',
    envelope,
    '{"a":0,"m":3}',
    '1000',
  ]);
  const [created, runAt] = stdout.trim().split('\n').map(Number);
  expect(created).toBe(1);
  expect(runAt).toBeGreaterThan(1_700_000_000_000);

  const seen: Array<{ payload: unknown; attempt: number; runAt: number; claimedAt: number }> = [];
  const worker = new Worker(
    name,
    async (job) =>
      void seen.push({
        payload: job.payload,
        attempt: job.attempt,
        runAt: job.runAt.getTime(),
        claimedAt: job.claimedAt.getTime(),
      }),
    {
      connection: redis.url(),
    },
  );
  cleanups.push(() => worker.close());
  await waitFor(() => seen.length === 1, { what: 'the run' });
  expect(seen[0]).toMatchObject({
    payload: { to: 'ada@example.com', when: new Date('2026-01-02T03:04:05.006Z'), '~note': 'tilde key' },
    attempt: 1,
    runAt,
  });
  expect(seen[0]!.claimedAt).toBeGreaterThanOrEqual(runAt!);
});
