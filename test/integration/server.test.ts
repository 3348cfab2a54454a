/**
 * The worker against the server it finds: idle cost, capability probing, eviction warnings, and
 * a Redis restart with appendfsync always.
 */
import { describe, expect, it } from 'vitest';
import { Queue, UnsupportedServerError, Worker } from '../../src/index.js';
import { startRedis } from '../support/redis-server.js';
import { inspector, perTestServers, uniqueQueue, waitFor } from '../support/fixtures.js';

const { cleanup, server } = perTestServers();

/** Commands the server ran (including those inside scripts), not counting INFO itself. */
async function commandsRun(url: string): Promise<number> {
  const r = inspector(url);
  const info = await r.info('commandstats');
  await r.quit();
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!['info', 'quit', 'hello', 'client|setinfo', 'client'].includes(match[1] ?? ''))
      total += Number(match[2]);
  }
  return total;
}

describe('idle cost', () => {
  it('an idle worker sends O(1) commands per second, with or without far-future jobs waiting', async () => {
    const s = await server();
    const name = uniqueQueue('idle');
    const worker = new Worker(name, async () => {}, { connection: s.url });
    worker.on('error', () => {});
    cleanup.push(() => worker.close());
    await worker.waitUntilReady();
    await new Promise((r) => setTimeout(r, 300));
    const windowMs = 5_000;
    const before = await commandsRun(s.url);
    await new Promise((r) => setTimeout(r, windowMs));
    const idleRate = ((await commandsRun(s.url)) - before) / (windowMs / 1000);

    const queue = new Queue<number>(name, { connection: s.url });
    cleanup.push(() => queue.close());
    await queue.addBulk(Array.from({ length: 1_000 }, (_, i) => ({ payload: i, opts: { delay: '1d' } })));
    await new Promise((r) => setTimeout(r, 300));
    const before2 = await commandsRun(s.url);
    await new Promise((r) => setTimeout(r, windowMs));
    const waitingRate = ((await commandsRun(s.url)) - before2) / (windowMs / 1000);

    console.log(
      `idle worker: ${idleRate.toFixed(1)} commands/s empty, ${waitingRate.toFixed(1)} with 1,000 far-future jobs`,
    );
    expect(idleRate).toBeLessThan(5);
    expect(waitingRate).toBeLessThan(5);
  }, 20_000);
});

describe('capabilities', () => {
  it('forcing zpopmin on a server without ZPOPMIN fails fast, naming the command', async () => {
    const s = await server(['--rename-command', 'ZPOPMIN', '']);
    const worker = new Worker(uniqueQueue(), async () => {}, { connection: s.url, strategy: 'zpopmin' });
    worker.on('error', () => {});
    cleanup.push(() => worker.close());
    const failure = await worker.waitUntilReady().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(UnsupportedServerError);
    expect((failure as Error).message).toMatch(/needs ZPOPMIN.*use strategy 'range'/);
  });

  it('a server that cannot run scripts fails fast, naming what is missing', async () => {
    const s = await server(['--rename-command', 'EVALSHA', '']);
    const worker = new Worker(uniqueQueue(), async () => {}, { connection: s.url });
    worker.on('error', () => {});
    cleanup.push(() => worker.close());
    await expect(worker.waitUntilReady()).rejects.toThrow(/lacks EVALSHA/);
  });

  it('logs the strategy it chose, with the server version: zpopmin, or range when ZPOPMIN is renamed away', async () => {
    const lines: string[] = [];
    const logger = { info: (m: string) => lines.push(m), warn: () => {}, error: () => {} };
    const modern = await server();
    const old = await server(['--rename-command', 'ZPOPMIN', '', '--rename-command', 'BZPOPMIN', '']);
    for (const s of [modern, old]) {
      const worker = new Worker(uniqueQueue('strategy'), async () => {}, { connection: s.url, logger });
      cleanup.push(() => worker.close());
      await worker.waitUntilReady();
    }
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^worker \S+ on queue 'strategy-[0-9a-f]+': strategy zpopmin, Redis \d+\.\d+/);
    expect(lines[1]).toMatch(/: strategy range, Redis \d+\.\d+/);
  });

  it('warns at start when the server may evict keys', async () => {
    const s = await server(['--maxmemory-policy', 'allkeys-lru']);
    const warnings: string[] = [];
    const worker = new Worker(uniqueQueue(), async () => {}, {
      connection: s.url,
      logger: { warn: (m) => warnings.push(m), error: () => {} },
    });
    cleanup.push(() => worker.close());
    await worker.waitUntilReady();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/maxmemory-policy is 'allkeys-lru'.*noeviction/);

    const quiet = await server();
    const silent: string[] = [];
    const other = new Worker(uniqueQueue(), async () => {}, {
      connection: quiet.url,
      logger: { warn: (m) => silent.push(m), error: () => {} },
    });
    cleanup.push(() => other.close());
    await other.waitUntilReady();
    expect(silent).toEqual([]);
  });
});

describe('Redis restart', () => {
  it('with appendfsync always, a Redis crash and restart loses no job', async () => {
    const args = ['--appendonly', 'yes', '--appendfsync', 'always'];
    let s = await startRedis({ args });
    const { port, dir } = s;
    cleanup.push(() => s.stop());
    const name = uniqueQueue('restart');
    const queue = new Queue<number>(name, { connection: s.url });
    const ids = (
      await queue.addBulk(
        Array.from({ length: 300 }, (_, i) => ({ payload: i, opts: { delay: Math.floor(i * 6) } })),
      )
    ).map((r) => r.id);
    await queue.close();
    const completed = new Set<string>();
    const worker = new Worker<number>(name, async (job) => void completed.add(job.id), {
      connection: s.url,
      concurrency: 5,
      leaseMs: 1_000,
    });
    worker.on('error', () => {}); // connection errors while Redis is down are expected here
    cleanup.push(() => worker.close({ timeoutMs: 1_000 }));
    await waitFor(() => completed.size > 50, { what: 'some jobs done' });
    await s.stop({ keepDir: true, signal: 'SIGKILL' });
    s = await startRedis({ args, port, dir });
    await waitFor(() => ids.every((id) => completed.has(id)), {
      timeoutMs: 20_000,
      what: 'every job completed',
    });
    const check = new Queue(name, { connection: s.url });
    // Nothing waits, runs or died: every job is kept as completed, once.
    const settled = {
      scheduled: 0,
      due: 0,
      held: 0,
      active: 0,
      dead: 0,
      completed: ids.length,
      cancelled: 0,
      waitingChildren: 0,
    };
    await waitFor(async () => JSON.stringify(await check.counts()) === JSON.stringify(settled), {
      what: 'every job kept as completed, nothing else left',
    });
    await check.close();
  }, 40_000);
});

describe('dropped connections', () => {
  it('killing the worker connections mid-run loses no job: commands are retried, held jobs come back', async () => {
    const s = await server();
    const name = uniqueQueue('kill');
    const queue = new Queue<number>(name, { connection: s.url });
    cleanup.push(() => queue.close());
    const ids = new Set(
      (
        await queue.addBulk(Array.from({ length: 200 }, (_, i) => ({ payload: i, opts: { delay: i * 5 } })))
      ).map((r) => r.id),
    );
    const completed = new Set<string>();
    const worker = new Worker<number>(
      name,
      async (job) => {
        await new Promise((r) => setTimeout(r, 5));
        completed.add(job.id);
      },
      { connection: s.url, concurrency: 10, leaseMs: 1_000 },
    );
    worker.on('error', () => {});
    cleanup.push(() => worker.close({ timeoutMs: 1_000 }));
    await waitFor(() => completed.size > 20, { what: 'some jobs done' });
    const admin = inspector(s.url);
    for (let i = 0; i < 3; i++) {
      // Every client but this one: the worker's command and subscriber connections, and the queue's.
      await admin.client('KILL', 'SKIPME', 'yes');
      await new Promise((r) => setTimeout(r, 150));
    }
    await admin.quit();
    await waitFor(() => [...ids].every((id) => completed.has(id)), {
      timeoutMs: 15_000,
      what: 'every job completed',
    });
    await waitFor(async () => (await queue.counts()).active === 0 && (await queue.counts()).scheduled === 0, {
      what: 'nothing left',
    });
    expect((await queue.counts()).dead).toBe(0);
  }, 30_000);
});
