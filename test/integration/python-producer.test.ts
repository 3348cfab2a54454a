/**
 * The protocol checked from outside: test/foreign/producer.py, a producer in Python written from
 * docs/PROTOCOL.md alone, adds 100 jobs through add.lua; a Node Worker runs each exactly once,
 * none before its due time, every value as the producer meant it. Needs Debian's python3-redis
 * (the README's prerequisites); without it this test fails, naming the package. The producer
 * connects as the ACL user PROTOCOL.md gives for it, so that rule is checked too.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { expandLua } from '../../src/redis/lua-source.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { PYTHON_PATH } from '../support/prerequisites.js';

const run = promisify(execFile);
const redis = useRedis();
const JOBS = 100;
// Debian's python3-redis serves the system interpreter; DELAYQ_PYTHON overrides it.
const PYTHON = PYTHON_PATH;
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** ACL SETUSER arguments of the producer user in docs/PROTOCOL.md, for queue `name`. */
function documentedAdderRule(name: string): { user: string; password: string; args: string[] } {
  const doc = readFileSync(join(import.meta.dirname, '../../docs/PROTOCOL.md'), 'utf8');
  const line = /```acl\n(user delayq-adder [^\n]*)\n```/.exec(doc)?.[1];
  if (line === undefined) throw new Error('docs/PROTOCOL.md has no ```acl block for delayq-adder');
  const [, user, ...args] = line.replaceAll('{emails}', `{${name}}`).match(/\([^)]*\)|\S+/g) ?? [];
  const password = args.find((a) => a.startsWith('>'))?.slice(1);
  if (user === undefined || password === undefined) throw new Error(`not an ACL user line: ${line}`);
  return { user, password, args };
}

/** What producer.py's payload(i) stands for, written here independently of it. */
function expected(i: number): Record<string, unknown> {
  return {
    i,
    name: `job ${i} \u2713`,
    ratio: i / 7,
    flag: i % 2 === 0,
    nothing: null,
    list: [1, 'two', 3.5],
    when: new Date(Date.UTC(2026, 0, 2, 3, 4, 5 + i, 6)),
    big: 2n ** 64n + BigInt(i),
    bytes: new Uint8Array([i % 256, 0, 255]),
    map: new Map<unknown, unknown>([
      [1, 'one'],
      ['k', [true]],
    ]),
    set: new Set(['a', 'b']),
    '~tilde': 'escaped',
    nan: Number.NaN,
    negZero: -0,
  };
}

it('jobs from a Python producer written from PROTOCOL.md run once each, none early, values intact', async () => {
  const probe = await run(PYTHON, ['-c', 'import redis']).catch((e: Error) => e);
  if (probe instanceof Error) {
    throw new Error(
      `${PYTHON} cannot import redis: install Debian's python3-redis (apt-get install python3-redis), or set DELAYQ_PYTHON to an interpreter that has redis-py (${probe.message})`,
    );
  }
  const name = uniqueQueue('py');
  const dir = await mkdtemp(join(tmpdir(), 'delayq-python-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const addLua = join(dir, 'add.lua');
  // The build ships this exact expansion as dist/scripts/add.lua.
  await writeFile(addLua, expandLua(join(import.meta.dirname, '../../src/scripts'), 'add.lua'));

  const runs = new Map<
    string,
    Array<{ payload: unknown; attempt: number; maxAttempts: number; runAt: number; claimedAt: number }>
  >();
  const worker = new Worker(
    name,
    async (job) => {
      const seen = runs.get(job.id) ?? [];
      seen.push({
        payload: job.payload,
        attempt: job.attempt,
        maxAttempts: job.maxAttempts,
        runAt: job.runAt.getTime(),
        claimedAt: job.claimedAt.getTime(),
      });
      runs.set(job.id, seen);
    },
    { connection: redis.url(), concurrency: 10 },
  );
  const queue = new Queue(name, { connection: redis.url() });
  cleanups.push(
    () => worker.close(),
    () => queue.close(),
  );
  await worker.waitUntilReady();

  const rule = documentedAdderRule(name);
  const admin = inspector(redis.url());
  await admin.call('ACL', 'SETUSER', rule.user, 'reset', ...rule.args);
  cleanups.push(async () => {
    await admin.call('ACL', 'DELUSER', rule.user);
    await admin.quit();
  });
  // Not yet in the server's script cache: the producer's EVALSHA gets NOSCRIPT and it loads it.
  await admin.script('FLUSH');

  const script = join(import.meta.dirname, '../foreign/producer.py');
  const { stdout } = await run(PYTHON, [
    script,
    String(redis.server().port),
    name,
    addLua,
    String(JOBS),
    rule.user,
    rule.password,
  ]);
  const adds = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { id: string; code: string; runAt: number });
  expect(adds).toHaveLength(JOBS + 1);
  expect(adds.slice(0, JOBS).every((a) => a.code === 'c')).toBe(true);
  // The first id added again: nothing written, the existing job's due time returned.
  expect(adds[JOBS]).toEqual({ id: 'py-0', code: 'k', runAt: adds[0]!.runAt });

  await waitFor(async () => runs.size === JOBS && (await queue.counts()).active === 0, {
    what: `${JOBS} jobs run and acked`,
  });
  expect(await queue.counts()).toMatchObject({ scheduled: 0, due: 0, active: 0, dead: 0 });
  for (let i = 0; i < JOBS; i++) {
    const id = `py-${i}`;
    const seen = runs.get(id);
    expect(seen, id).toHaveLength(1);
    const [only] = seen!;
    expect(only!.attempt).toBe(1);
    // The header's M field, written by the producer for every fifth job; absent means 3.
    expect(only!.maxAttempts).toBe(i % 5 === 0 ? 5 : 3);
    expect(only!.runAt).toBe(adds[i]!.runAt);
    expect(only!.claimedAt, `${id} started before its due time`).toBeGreaterThanOrEqual(only!.runAt);
    expect(only!.payload, id).toEqual(expected(i));
    // toEqual does not tell -0 from 0.
    expect(Object.is((only!.payload as { negZero: number }).negZero, -0)).toBe(true);
  }
});

it('the Python producer reads the config record and refuses a queue whose codec it cannot write', async () => {
  const name = uniqueQueue('py-msgpack');
  const queue = new Queue(name, { connection: redis.url(), codec: 'msgpack' });
  cleanups.push(() => queue.close());
  await queue.counts(); // the first call records the queue's definition
  const script = join(import.meta.dirname, '../foreign/producer.py');
  const result = await run(PYTHON, [
    script,
    String(redis.server().port),
    name,
    '/nonexistent/add.lua',
    '1',
  ]).then(
    () => null,
    (err: Error & { code?: number; stderr?: string }) => err,
  );
  expect(result?.code).toBe(1);
  expect(result?.stderr).toContain("has codec 'msgpack'; this producer writes only 'json'");
  // Nothing was written: the producer stopped before its first add.
  expect(await queue.counts()).toMatchObject({ scheduled: 0, due: 0, active: 0, dead: 0 });
});
