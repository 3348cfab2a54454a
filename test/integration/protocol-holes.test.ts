/**
 * The five ways a client written from docs/PROTOCOL.md alone could lose or corrupt jobs (issue 32),
 * each against a real redis-server: the document's own large-integer example, a cancel with a key
 * left out, extend without its flags value, ids that are not UTF-8, and creating a queue (the
 * documented config.lua call, alone and racing a Node client; the old read-then-HSET recipe's loss
 * shown beside it). Each failed against the code and document before its fix.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigMismatchError, Queue, Worker } from '../../src/index.js';
import { addKeys as addKeysOf } from '../../src/operations/add.js';
import { configKey, legacyKeys, queueKeys } from '../../src/redis/keys.js';
import { expandLua } from '../../src/redis/lua-source.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const run = promisify(execFile);
const redis = useRedis();
const SCRIPTS = join(import.meta.dirname, '../../src/scripts');
const PROTOCOL = readFileSync(join(import.meta.dirname, '../../docs/PROTOCOL.md'), 'utf8');
let raw: Redis;
const cleanups: Array<() => Promise<void>> = [];
beforeAll(() => {
  raw = inspector(redis.url());
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await raw.quit();
});

/** EVAL of a shipped script (includes expanded, as dist/scripts has it). */
function evalScript(
  name: string,
  keys: readonly string[],
  args: ReadonlyArray<string | Buffer>,
): Promise<unknown> {
  return raw.eval(expandLua(SCRIPTS, `${name}.lua`), keys.length, ...keys, ...args);
}

/** Every key of queue `name`, each with its DUMP: equal before and after means nothing changed. */
async function snapshot(name: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of (await raw.keys(`dq:{${name}}:*`)).sort()) {
    out.set(key, (await raw.dumpBuffer(key))?.toString('hex') ?? 'gone');
  }
  return out;
}

/** The add.lua KEYS, in the order its header gives (test/hotpath/add-keys.test.ts pins the two). */
function addKeys(name: string): string[] {
  return addKeysOf(queueKeys(name));
}

async function newQueue(name: string, codec?: 'msgpack'): Promise<Queue> {
  const queue = new Queue(name, { connection: redis.url(), ...(codec ? { codec } : {}) });
  cleanups.push(() => queue.close());
  await queue.counts();
  return queue;
}

describe('hole 1: the large-integer number tag', () => {
  it("the document's example, written by hand as another language would, runs on a Node worker as 2^60", async () => {
    const example = /exact decimal integer of such a double, e\.g\. `"(\d+)"`/.exec(PROTOCOL)?.[1];
    expect(example).toBe(String(2n ** 60n));
    const name = uniqueQueue('tag');
    await newQueue(name);
    const payload = `{"n":{"~t":"number","v":"${example}"}}`;
    const record = Buffer.concat([Buffer.from([0x01, 0x00]), Buffer.from(payload)]);
    const reply = (await evalScript('add', addKeys(name), [
      '1',
      '0',
      '0',
      '0',
      'big',
      'dk',
      '0',
      record,
      '',
    ])) as unknown[];
    expect(String(reply[0])).toBe('c');

    const seen: unknown[] = [];
    const worker = new Worker(name, async (job) => void seen.push(job.payload), { connection: redis.url() });
    cleanups.push(() => worker.close());
    await waitFor(async () => seen.length === 1 || (await raw.zcard(queueKeys(name).dead)) > 0, {
      what: 'the run',
    });
    expect(await raw.zcard(queueKeys(name).dead)).toBe(0);
    expect(seen).toEqual([{ n: 2 ** 60 }]);
  });
});

describe('hole 2: cancel with a key left out', () => {
  it('is refused, naming KEYS, before it writes: the running job keeps its lease and is cancelled by a full call', async () => {
    const name = uniqueQueue('cancel');
    const queue = await newQueue(name);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const aborted: boolean[] = [];
    const worker = new Worker(
      name,
      async (job) => {
        await Promise.race([gate, new Promise((r) => job.signal.addEventListener('abort', r))]);
        aborted.push(job.signal.aborted);
      },
      { connection: redis.url() },
    );
    cleanups.push(() => worker.close());
    await queue.add({ x: 1 }, { id: 'running-1' });
    const k = queueKeys(name);
    await waitFor(async () => (await raw.zcard(k.leases)) === 1, { what: 'the claim' });

    // The key list a client once took from an old table: 14 keys, no pg.
    const fourteen = [
      ...addKeys(name).slice(0, 7),
      k.records,
      k.leases,
      k.cancelled,
      k.errors,
      k.wake,
      k.counters,
      k.events,
    ];
    const before = await snapshot(name);
    await expect(evalScript('cancel', fourteen, ['running-1', '0', '0'])).rejects.toThrow(
      /DELAYQ_BAD_ARG KEYS has 14 keys; this script takes 19/,
    );
    expect(await snapshot(name)).toEqual(before);
    expect((await queue.get('running-1'))?.state).toBe('active');

    expect(await queue.cancel('running-1')).toBeTruthy();
    await waitFor(() => aborted.length === 1, { what: 'the abort' });
    release();
    expect((await queue.get('running-1'))?.state).toBe('cancelled');
  });
});

describe('hole 3: extend without its flags value', () => {
  it('is refused, naming ARGV[2]; with the flags value the lease is extended', async () => {
    const name = uniqueQueue('extend');
    const a = queueKeys(name).leases;
    const now = await serverNow(raw);
    const member = `1.${now}|job-1`;
    await raw.zadd(a, now + 5_000, member);
    await expect(evalScript('extend', [a], ['60000', member])).rejects.toThrow(
      /DELAYQ_BAD_ARG ARGV\[2\] flags/,
    );
    expect(Number(await raw.zscore(a, member))).toBe(now + 5_000);
    await expect(evalScript('extend', [a], ['0', '', member])).rejects.toThrow(/ARGV\[1\] lease ms 0/);
    await expect(evalScript('extend', [a], ['60000', '', 'job-1'])).rejects.toThrow(
      /ARGV\[3\] lease member job-1/,
    );

    const reply = (await evalScript('extend', [a], ['60000', '', member])) as number[];
    expect(reply[1]).toBeGreaterThanOrEqual(now + 60_000);
    expect(Number(await raw.zscore(a, member))).toBe(reply[1]);
  });
});

describe('hole 4: ids and group names that are not UTF-8', () => {
  const bad: Array<[string, Buffer]> = [
    ['a stray continuation byte', Buffer.from([0x61, 0x80, 0x62])],
    ['a lone 0xff', Buffer.from([0x61, 0xff])],
    ['a truncated sequence', Buffer.from([0x61, 0xe2, 0x82])],
    ['an overlong form of "/"', Buffer.from([0xc0, 0xaf])],
    ['a surrogate (CESU-8)', Buffer.from([0xed, 0xa0, 0x80])],
    ['a code point past U+10FFFF', Buffer.from([0xf4, 0x90, 0x80, 0x80])],
  ];
  for (const [what, id] of bad) {
    it(`refuses an id with ${what} at add, writing nothing`, async () => {
      const name = uniqueQueue('utf8');
      await newQueue(name);
      const before = await snapshot(name);
      const record = Buffer.from('\x01\x00{}');
      await expect(
        evalScript('add', addKeys(name), ['1', '0', '0', '0', id, 'dk', '0', record, '']),
      ).rejects.toThrow(/DELAYQ_BAD_ARG job 1 of 1: id is not valid UTF-8/);
      expect(await snapshot(name)).toEqual(before);
    });
  }

  it('refuses a group that is not UTF-8, and accepts ids and groups that are', async () => {
    const name = uniqueQueue('utf8g');
    const queue = await newQueue(name);
    const group = Buffer.from([0x67, 0xff]);
    // Flags A = G; group length, the group, its due (0: the script writes it); then the payload.
    const grouped = (g: Buffer): Buffer =>
      Buffer.concat([Buffer.from([0x01, 0x10, g.length]), g, Buffer.alloc(6), Buffer.from('{}')]);
    const before = await snapshot(name);
    await expect(
      evalScript('add', addKeys(name), [
        '1',
        '0',
        '0',
        '0',
        'j1',
        'dk',
        '0',
        grouped(group),
        Buffer.concat([Buffer.from('g'), group]),
      ]),
    ).rejects.toThrow(/DELAYQ_BAD_ARG job 1 of 1: group is not valid UTF-8/);
    expect(await snapshot(name)).toEqual(before);

    const id = 'ключ-😀';
    const reply = (await evalScript('add', addKeys(name), [
      '1',
      '0',
      '0',
      '0',
      id,
      'dk',
      '0',
      grouped(Buffer.from('grüppe')),
      'ggrüppe',
    ])) as unknown[];
    expect(String(reply[0])).toBe('c');
    expect(await queue.get(id)).toMatchObject({ id, group: 'grüppe' });
  });
});

describe('hole 5: creating a queue', () => {
  /** The document's ```sh block calling config.lua, made to run here. */
  async function documentedConfigCall(name: string): Promise<string> {
    const line = /```sh\n(redis-cli --eval dist\/scripts\/config\.lua [^\n]*)\n```/.exec(PROTOCOL)?.[1];
    expect(line, 'docs/PROTOCOL.md has a ```sh block calling config.lua').toBeDefined();
    const dir = await mkdtemp(join(tmpdir(), 'delayq-config-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'config.lua');
    await writeFile(file, expandLua(SCRIPTS, 'config.lua'));
    const command = line!
      .replace(
        'redis-cli --eval dist/scripts/config.lua',
        `redis-cli -p ${redis.server().port} --eval '${file}'`,
      )
      .replaceAll('{emails}', `{${name}}`);
    const { stdout } = await run('bash', ['-c', command]);
    return stdout;
  }

  it('the document no longer tells a producer to HSET the record itself', () => {
    expect(PROTOCOL).not.toMatch(/may record it with `HSET`/);
    expect(PROTOCOL).toMatch(/only through `config\.lua`/);
  });

  it("the document's config.lua call creates a queue a Node client then uses, and records nothing over another client's queue", async () => {
    const fresh = uniqueQueue('cfg');
    const out = await documentedConfigCall(fresh);
    expect(out).toMatch(/codec\njson/);
    expect(await raw.hget(`dq:{${fresh}}:config`, 'format')).toBe('2');
    const queue = await newQueue(fresh);
    await queue.add({ ok: true }, { id: 'one' });
    expect((await queue.get('one'))?.payload).toEqual({ ok: true });
    await expect(newQueue(fresh, 'msgpack')).rejects.toBeInstanceOf(ConfigMismatchError);

    // The race of the old recipe: a Node client made the queue msgpack first. The call is refused
    // whole, and the record stays msgpack.
    const taken = uniqueQueue('cfg');
    await newQueue(taken, 'msgpack');
    const before = await snapshot(taken);
    const refused = await documentedConfigCall(taken).catch(
      (e: { stdout?: string; stderr?: string }) => `${e.stdout}${e.stderr}`,
    );
    expect(refused).toMatch(/DELAYQ_CONFIG_MISMATCH codec msgpack/);
    expect(await snapshot(taken)).toEqual(before);
  });

  it("the race itself: the old recipe loses a Node client's queue; config.lua, called at the same time as a Node client, never does", async () => {
    // The old recipe, in the interleaving that lost a queue: read (nothing), a Node client creates
    // its msgpack queue, then HSET every field as json.
    const lost = uniqueQueue('race');
    expect(await raw.hgetall(`dq:{${lost}}:config`)).toEqual({});
    await newQueue(lost, 'msgpack');
    await raw.hset(`dq:{${lost}}:config`, { format: '2', layout: 'zset', partitions: '1', codec: 'json' });
    expect(await raw.hget(`dq:{${lost}}:config`, 'codec')).toBe('json');

    // The documented call and a Node client started together, 20 times: one of them creates the
    // queue, the other is refused, and the record is the creator's.
    const configKeys = (name: string): string[] => {
      const old = legacyKeys(name);
      return [configKey(name), old.layout, old.partitions, old.schedule, old.active, old.dead];
    };
    const json = ['write', '2', '', '1', 'zset', 'zset', 'json', 'json', '', '-10000', '', '', ''];
    for (let round = 0; round < 20; round++) {
      const name = uniqueQueue('race');
      const node = new Queue(name, { connection: redis.url(), codec: 'msgpack' });
      cleanups.push(() => node.close());
      const [foreign, nodeOpen] = await Promise.allSettled([
        evalScript('config', configKeys(name), json),
        node.counts(),
      ]);
      const codec = await raw.hget(`dq:{${name}}:config`, 'codec');
      if (foreign.status === 'fulfilled') {
        expect(nodeOpen.status).toBe('rejected');
        expect((nodeOpen as PromiseRejectedResult).reason).toBeInstanceOf(ConfigMismatchError);
        expect(codec).toBe('json');
      } else {
        expect(String(foreign.reason)).toMatch(/DELAYQ_CONFIG_MISMATCH codec msgpack/);
        expect(nodeOpen.status).toBe('fulfilled');
        expect(codec).toBe('msgpack');
      }
    }
  });

  it('a config record holding a value of the wrong form is refused by name, nothing written', async () => {
    for (const [field, value] of [
      ['version', 'abc'],
      ['partitions', '01'],
      ['events', '1.5'],
    ] as const) {
      const name = uniqueQueue('badcfg');
      await newQueue(name);
      await raw.hset(`dq:{${name}}:config`, field, value);
      const before = await snapshot(name);
      const queue = new Queue(name, { connection: redis.url() });
      cleanups.push(() => queue.close());
      const error = (await queue.counts().catch((e: unknown) => e)) as Error & { code?: string };
      expect(error.code).toBe('DELAYQ_BAD_CONFIG');
      expect(error.message).toContain(`dq:{${name}}:config ${field} ${value} is not`);
      expect(await snapshot(name)).toEqual(before);
    }
  });
});
