/**
 * Scripts as FCALL of the delayq function library (Redis >= 7.0): loaded on first need, loaded
 * again when the server lost it, and EVALSHA on servers without functions, decided once per
 * connection. Script errors map to the same classes either way.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { DurabilityError, Queue } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { ScriptBadArg } from '../../src/redis/script-errors.js';
import { functionLibrary, runScript, script } from '../../src/redis/scripts.js';
import { inspector, perTestServers, uniqueQueue } from '../support/fixtures.js';

const { cleanup, server } = perTestServers();

function open(url: string): Redis {
  const r = inspector(url);
  cleanup.push(async () => void (await r.quit()));
  return r;
}

/** Every attempt at `command` so far (served, failed inside, or rejected), from INFO commandstats. */
async function attempts(r: Redis, command: string): Promise<number> {
  const m = new RegExp(`cmdstat_${command}:calls=(\\d+),.*rejected_calls=(\\d+),failed_calls=(\\d+)`).exec(
    await r.info('commandstats'),
  );
  return m ? Number(m[1]) + Number(m[2]) + Number(m[3]) : 0;
}

/** ERR replies so far ("unknown command", "Function not found"; NOSCRIPT is counted apart). */
async function errReplies(r: Redis): Promise<number> {
  return Number(/errorstat_ERR:count=(\d+)/.exec(await r.info('errorstats'))?.[1] ?? 0);
}

async function libraries(r: Redis): Promise<string[]> {
  const list = (await r.call('FUNCTION', 'LIST')) as unknown[][];
  return list.map((lib) => String(lib[1]));
}

async function addSome(url: string, n: number): Promise<void> {
  const queue = new Queue<number>(uniqueQueue('fn'), { connection: url });
  try {
    for (let i = 0; i < n; i++) await queue.add(i, { delay: '1h' });
  } finally {
    await queue.close();
  }
}

describe('the function library', () => {
  it('is named by its hash, and has one function per script', () => {
    const lib = functionLibrary();
    expect(lib.name).toMatch(/^delayq_[0-9a-f]{12}$/);
    expect(lib.functions.get('claim')).toBe(`${lib.name}_claim`);
    expect(lib.functions.get('dead-retry')).toBe(`${lib.name}_dead_retry`);
    expect(lib.functions.size).toBeGreaterThanOrEqual(30);
  });

  it('is loaded by the first call, which then runs as FCALL, and no script runs by EVALSHA', async () => {
    const s = await server();
    const r = open(s.url);
    expect(await libraries(r)).toEqual([]);
    await addSome(s.url, 3);
    expect(await libraries(r)).toEqual([functionLibrary().name]);
    expect(await attempts(r, 'fcall')).toBeGreaterThanOrEqual(3);
    expect(await attempts(r, 'evalsha')).toBe(0);
    expect(await attempts(r, 'eval')).toBe(0);
  });

  it('is loaded again after FUNCTION FLUSH, and the call that found it missing succeeds', async () => {
    const s = await server();
    const r = open(s.url);
    const queue = new Queue<number>(uniqueQueue('flush'), { connection: s.url });
    cleanup.push(() => queue.close());
    await queue.add(1, { delay: '1h' });
    await r.call('FUNCTION', 'FLUSH');
    expect(await libraries(r)).toEqual([]);
    const job = await queue.add(2, { delay: '1h' });
    expect(job.created).toBe(true);
    expect(await libraries(r)).toEqual([functionLibrary().name]);
    expect(await queue.counts()).toMatchObject({ scheduled: 2 });
    expect(await attempts(r, 'evalsha')).toBe(0);
  });

  it('leaves another library, and an older delayq library, alone', async () => {
    const s = await server();
    const r = open(s.url);
    await r.call(
      'FUNCTION',
      'LOAD',
      "#!lua name=delayq_000000000000\nredis.register_function('delayq_000000000000_add', function() return 'old' end)",
    );
    await addSome(s.url, 1);
    expect((await libraries(r)).sort()).toEqual(['delayq_000000000000', functionLibrary().name].sort());
    expect(await r.call('FCALL', 'delayq_000000000000_add', 0)).toBe('old');
  });

  for (const renamed of ['FUNCTION', 'FCALL']) {
    it(`runs through EVALSHA where ${renamed} is renamed away, deciding once per connection`, async () => {
      const s = await server(['--rename-command', renamed, '']);
      const r = open(s.url);
      const queue = new Queue<number>(uniqueQueue('old'), { connection: s.url });
      cleanup.push(() => queue.close());
      await queue.add(0, { delay: '1h' });
      const errorsAfterFirst = await errReplies(r);
      const fcallsAfterFirst = await attempts(r, 'fcall');
      const evalshas = await attempts(r, 'evalsha');
      for (let i = 1; i <= 20; i++) await queue.add(i, { delay: '1h' });
      expect(await queue.counts()).toMatchObject({ scheduled: 21 });
      expect(await errReplies(r)).toBe(errorsAfterFirst);
      expect(await attempts(r, 'fcall')).toBe(fcallsAfterFirst);
      expect((await attempts(r, 'evalsha')) - evalshas).toBeGreaterThanOrEqual(20);
    });
  }

  it('maps a script error raised inside a function to its class, as with EVALSHA', async () => {
    const s = await server();
    const r = open(s.url);
    const client = open(s.url);
    const keys = queueKeys(uniqueQueue('err'));
    const failure = await runScript(client, script('extend'), [keys.leases], ['soon', 'm']).catch(
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(ScriptBadArg);
    expect((failure as ScriptBadArg).detail).toMatch(/^ARGV\[1\] lease ms soon is not a whole number/);
    expect((failure as ScriptBadArg).scriptName).toBe('extend');
    expect(await attempts(r, 'fcall')).toBeGreaterThanOrEqual(1);
    expect(await attempts(r, 'evalsha')).toBe(0);
  });
});

describe('the function library with a WAIT after the script', () => {
  it('a durable add goes by FCALL too, and loads the library again after FUNCTION FLUSH', async () => {
    const s = await server();
    const r = open(s.url);
    const queue = new Queue<number>(uniqueQueue('durable'), { connection: s.url });
    cleanup.push(() => queue.close());
    await queue.add(0, { delay: '1h' });
    await r.call('FUNCTION', 'FLUSH');
    // No replica here: WAIT counts none, so the add reports it, once the script has run.
    await expect(
      queue.add(1, { delay: '1h', durability: { replicas: 1, timeoutMs: 10 } }),
    ).rejects.toBeInstanceOf(DurabilityError);
    expect(await libraries(r)).toEqual([functionLibrary().name]);
    expect(await queue.counts()).toMatchObject({ scheduled: 2 });
    expect(await attempts(r, 'evalsha')).toBe(0);
    expect(await attempts(r, 'eval')).toBe(0);
  });
});
