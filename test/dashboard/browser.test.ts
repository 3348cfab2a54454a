/**
 * The dashboard in a real browser: headless Chromium (the Debian package, driven by playwright-core)
 * loads a queue page, sees the counts, retries a dead job by clicking, and leaves a screenshot in
 * .tmp/test-artifacts/dashboard.png.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { startDashboard } from '../../src/dashboard/server.js';
import { DelayqMetrics } from '../../src/metrics/metrics.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../../.tmp/test-artifacts/', import.meta.url));
const redis = useRedis();
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

interface Task {
  kind: string;
  doomed?: boolean;
}

describe.skipIf(!existsSync(CHROMIUM) && !process.env['CI'])('dashboard in a browser', () => {
  it('shows the counts and retries a dead job on click', { timeout: 90_000 }, async () => {
    const name = uniqueQueue('orders');
    const metrics = new DelayqMetrics();
    // A msgpack queue: the dashboard decodes with the codec its config records.
    const queue = new Queue<Task>(name, { connection: redis.url(), codec: 'msgpack' });
    open.push(queue);
    metrics.observeQueue(queue);
    // Some history for the charts: 10 jobs run, 2 die.
    await queue.addBulk(
      Array.from({ length: 12 }, (_, i) => ({
        payload: { kind: i % 6 === 5 ? 'charge-card' : 'send-receipt', doomed: i % 6 === 5 },
        opts: { id: `order-${1000 + i}`, delay: i * 40, attempts: 1 },
      })),
    );
    const worker = new Worker<Task>(
      name,
      async (job) => {
        if (job.payload.doomed) throw new Error('card declined: insufficient funds');
      },
      { connection: redis.url(), concurrency: 4 },
    );
    worker.on('error', () => {});
    metrics.observeWorker(worker);
    await waitFor(
      async () => {
        const c = await queue.counts();
        return c.dead === 2 && c.scheduled === 0 && c.active === 0;
      },
      { what: 'history to settle' },
    );
    await worker.close();
    await queue.addBulk(
      Array.from({ length: 30 }, (_, i) => ({
        payload: { kind: ['send-receipt', 'ship-order', 'nightly-report'][i % 3]! },
        opts: { id: `order-${2000 + i}`, delay: 60_000 + ((i * 7_919_000) % 3_480_000) },
      })),
    );

    const token = 'browser-test-token-0123456789';
    const dashboard = await startDashboard({ connection: redis.url(), port: 0, token, metrics });
    open.push(dashboard);
    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    open.push(browser);
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(msg.text());
    });

    await page.goto(`${dashboard.url}queues/${name}?token=${token}`);
    expect(new URL(page.url()).search).toBe(''); // the token left the address bar
    await page.locator('#c-scheduled', { hasText: '30' }).waitFor({ timeout: 15_000 });
    expect(await page.locator('#c-dead').textContent()).toBe('2');
    expect(await page.locator('#c-active').textContent()).toBe('0');
    await page.locator('#table-dead tbody tr[data-id]').nth(1).waitFor();
    expect(await page.locator('#table-dead tbody tr[data-id]').count()).toBe(2);
    await expect
      .poll(() => page.locator('#table-dead').textContent())
      .toContain('card declined: insufficient funds');

    const firstDead = page.locator('#table-dead tbody tr[data-id]').first();
    const id = (await firstDead.getAttribute('data-id'))!;
    await firstDead.locator('button[data-action="retry"]').click();
    await page.locator('#toast', { hasText: `retried ${id}` }).waitFor({ timeout: 10_000 });
    await page.locator('#c-dead', { hasText: /^1$/ }).waitFor({ timeout: 10_000 });

    const r = inspector(redis.url());
    const keys = queueKeys(name);
    expect(await r.zcard(keys.dead)).toBe(1);
    expect(await r.zscore(keys.dead, id)).toBeNull();
    expect(await r.zscore(keys.schedule, id)).not.toBeNull();
    await r.quit();

    // The inspector shows a msgpack job's payload (decoded with the recorded codec).
    await page.locator('#table-scheduled tbody tr[data-id="order-2000"]').click();
    await expect.poll(() => page.locator('#inspector').textContent()).toContain('"kind": "send-receipt"');
    expect(await page.locator('#inspector').textContent()).not.toContain('cannot decode');

    // Inspect the remaining dead job, so the screenshot shows the inspector too.
    await page.locator('#table-dead tbody tr[data-id]').first().click();
    await page.locator('#inspector pre.bad').waitFor();
    expect(await page.locator('#inspector').textContent()).toContain('card declined');
    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}dashboard.png`, fullPage: true });
    expect(problems).toEqual([]);
  });
});
