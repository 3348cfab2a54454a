/**
 * docs/PROTOCOL.md is enough for a producer in another language: the redis-cli line the document
 * gives, run by a shell as it stands (only the queue, the port and the script's path changed), adds
 * a job that a Worker runs with its payload intact.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { partitionKeys } from '../../src/redis/keys.js';
import { expandLua } from '../../src/redis/lua-source.js';
import { addKeys } from '../../src/operations/add.js';
import { decodeRecord } from '../../src/record/index.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const run = promisify(execFile);
const redis = useRedis();
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

const DOC = readFileSync(join(import.meta.dirname, '../../docs/PROTOCOL.md'), 'utf8');

/** The ```sh block of docs/PROTOCOL.md that calls add.lua with redis-cli. */
function documentedLine(): string {
  const line = /```sh\n(redis-cli --eval dist\/scripts\/add\.lua [^\n]*)\n```/.exec(DOC)?.[1];
  if (line === undefined) throw new Error('docs/PROTOCOL.md has no ```sh block calling add.lua');
  return line;
}

it('a job added with the redis-cli line of the protocol document is run by a Worker', async () => {
  const name = uniqueQueue('cli');
  // The build ships this exact expansion as dist/scripts/add.lua.
  const dir = await mkdtemp(join(tmpdir(), 'delayq-protocol-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const addLua = join(dir, 'add.lua');
  await writeFile(addLua, expandLua(join(import.meta.dirname, '../../src/scripts'), 'add.lua'));
  // The queue exists (its workers recorded it), as the document asks a producer to check.
  const queue = new Queue<{ to: string }>(name, { connection: redis.url() });
  cleanups.push(() => queue.close());
  await queue.counts();

  const line = documentedLine()
    .replace(
      'redis-cli --eval dist/scripts/add.lua',
      `redis-cli -p ${redis.server().port} --eval '${addLua}'`,
    )
    .replaceAll('{emails}', `{${name}}`);
  const { stdout } = await run('bash', ['-c', line]);
  const [code, runAt] = stdout.trim().split('\n');
  expect(code).toBe('c');
  expect(Number(runAt)).toBeGreaterThan(1_700_000_000_000);

  // Stored as the document says: header 01 08 FF FB (priority -5), then the payload's JSON.
  const raw = inspector(redis.url());
  cleanups.push(async () => void (await raw.quit()));
  const record = await raw.hgetBuffer(partitionKeys(name, 1)[0]!.records, 'welcome:42');
  expect(record?.subarray(0, 4)).toEqual(Buffer.from([0x01, 0x08, 0xff, 0xfb]));
  expect(decodeRecord(record!).header.priority).toBe(-5);
  // It waits in `p` as `<prio>:<id>`, the key table's form (its example: `-5:a1b2`).
  expect(DOC).toContain('(prio in decimal, e.g. `-5:a1b2`)');
  expect(await raw.zscore(partitionKeys(name, 1)[0]!.prioWaiting, '-5:welcome:42')).toBe(runAt);
  expect(await queue.get('welcome:42')).toMatchObject({
    state: 'scheduled',
    payload: { to: 'ada@example.com' },
  });

  // Run now rather than in 10 minutes: reschedule keeps the record, payload and priority.
  await queue.reschedule('welcome:42', { delay: 0 });
  const seen: Array<{ payload: unknown; attempt: number }> = [];
  const worker = new Worker(
    name,
    async (job) => void seen.push({ payload: job.payload, attempt: job.attempt }),
    {
      connection: redis.url(),
    },
  );
  cleanups.push(() => worker.close());
  await waitFor(() => seen.length === 1, { what: 'the run' });
  expect(seen[0]).toEqual({ payload: { to: 'ada@example.com' }, attempt: 1 });
});

it("add.lua takes the elapsed example of the document (ms since the call, then a bound of the server's clock)", async () => {
  const example = /\(`(\d+):(\d+)`\)/.exec(DOC);
  expect(example?.[0]).toBe('(`12:1764547200123`)');
  const name = uniqueQueue('elapsed');
  const queue = new Queue(name, { connection: redis.url() });
  cleanups.push(() => queue.close());
  await queue.counts();
  const k = partitionKeys(name, 1)[0]!;
  const raw = inspector(redis.url());
  cleanups.push(async () => void (await raw.quit()));
  const before = await serverNow(raw);
  const reply = (await raw.eval(
    expandLua(join(import.meta.dirname, '../../src/scripts'), 'add.lua'),
    17,
    ...addKeys(k),
    '1',
    `${example![1]}:${example![2]}`,
    '0',
    '0',
    'e1',
    'dk',
    '60000',
    Buffer.from('\x01\x00{}'),
    '',
  )) as unknown[];
  expect(String(reply[0])).toBe('c');
  // The bound is far more than 10 s before the script's own figure, so it is not used: the delay
  // counts from now - 12 ms.
  const due = Number(reply[1]);
  expect(due).toBeGreaterThanOrEqual(before + 60_000 - 12);
  expect(due).toBeLessThanOrEqual((await serverNow(raw)) + 60_000 - 12);
});
