/**
 * The dashboard's throughput and lateness charts and `delayq stats`' lateness come from the ring of
 * counter snapshots in Redis (stats.lua), not from workers in the reading process: seeded
 * snapshots show up in both.
 */
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startDashboard, type DashboardServer } from '../../src/dashboard/server.js';
import { Inspector } from '../../src/inspect/inspector.js';
import { COUNTER_NAMES, RING_SECONDS, zeroCounters, type CounterValues } from '../../src/operations/stats.js';
import { Queue } from '../../src/queue.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, serverNow, uniqueQueue, useRedis } from '../support/fixtures.js';

const redis = useRedis();
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/** A ring slot's bytes as stats.lua packs them: uint48 second, then uint32 per counter. */
function snapshot(second: number, values: Partial<CounterValues>): Buffer {
  const all = { ...zeroCounters(), ...values };
  const out = Buffer.alloc(6 + 4 * COUNTER_NAMES.length);
  out.writeUIntBE(second, 0, 6);
  COUNTER_NAMES.forEach((name, i) => out.writeUInt32BE(all[name], 6 + 4 * i));
  return out;
}

/** Two snapshots, 3 and 2 seconds ago: 3 jobs claimed and completed in between, 10 ms late each. */
async function seed(r: Redis, name: string): Promise<number> {
  const second = Math.floor((await serverNow(r)) / 1000);
  const before = { claimed: 10, completed: 10, 'lat:+Inf': 10, 'lat:sum': 50, 'lat:5': 10, 'lat:10': 10 };
  const after = {
    claimed: 13,
    completed: 13,
    failed: 1,
    'lat:+Inf': 13,
    'lat:sum': 80,
    'lat:5': 10,
    'lat:10': 13,
  };
  await r.hset(
    queueKeys(name).counters,
    `s:${(second - 3) % RING_SECONDS}`,
    snapshot(second - 3, before),
    `s:${(second - 2) % RING_SECONDS}`,
    snapshot(second - 2, after),
  );
  return second;
}

describe('activity from the counters', () => {
  it('the overview’s charts show the seconds between snapshots, in a process with no worker', async () => {
    const name = uniqueQueue('act');
    const queue = new Queue(name, { connection: redis.url() });
    open.push(queue);
    await queue.counts(); // writes the queue's config record
    const r = inspector(redis.url());
    open.push({ close: async () => void (await r.quit()) });
    const second = await seed(r, name);

    const d: DashboardServer = await startDashboard({ connection: redis.url(), port: 0 });
    open.push(d);
    const o = (await (await fetch(`${d.url}api/queues/${name}`)).json()) as {
      activity: {
        t: number[];
        completed: number[];
        failed: number[];
        latenessAvg: Array<number | null>;
        latenessP99: Array<number | null>;
      };
    };
    const at = o.activity.t.indexOf(second - 2);
    expect(at).toBeGreaterThan(0);
    expect(o.activity.completed[at]).toBe(3);
    expect(o.activity.failed[at]).toBe(1);
    expect(o.activity.latenessAvg[at]).toBe(10);
    expect(o.activity.latenessP99[at]).toBe(10);
    // Nothing else happened in the window.
    expect(o.activity.completed.reduce((a, b) => a + b, 0)).toBe(3);
    expect(o.activity.latenessAvg.filter((v) => v !== null)).toEqual([10]);
  });

  it('stats’ lateness is the last minute’s claims from the counters', async () => {
    const name = uniqueQueue('act');
    const queue = new Queue(name, { connection: redis.url() });
    open.push(queue);
    await queue.counts();
    const r = inspector(redis.url());
    open.push({ close: async () => void (await r.quit()) });
    const view = await Inspector.open(r, name);
    open.push(view);
    expect(await view.lateness(await view.counts())).toMatchObject({ claimedLastMinute: 0, avgMs: null });
    await seed(r, name);
    expect(await view.lateness(await view.counts())).toEqual({
      claimedLastMinute: 3,
      avgMs: 10,
      p50Ms: 10,
      p99Ms: 10,
      oldestDueWaitingMs: 0,
    });
  });
});
