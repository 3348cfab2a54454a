/**
 * The dashboard in a real browser: headless Chromium (the Debian package, driven by playwright-core)
 * loads a queue page, sees the counts, retries a dead job by clicking, searches, shows and cancels a
 * flow's parent waiting for its children, and leaves screenshots in .tmp/test-artifacts/.
 */
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { startDashboard } from '../../src/dashboard/server.js';
import { DelayqMetrics } from '../../src/metrics/metrics.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { CHROMIUM_PATH } from '../support/prerequisites.js';

/**
 * Run `check` on a row's element again when the page's 2 s refresh replaced the row while it was
 * being looked at (Playwright then reports the element detached), a bounded number of times.
 */
async function onStableRow(check: () => Promise<void>): Promise<void> {
  for (let tries = 1; ; tries++) {
    try {
      await check();
      return;
    } catch (err) {
      if (tries >= 5 || !/not attached|detached/i.test(String(err))) throw err;
    }
  }
}

const ARTIFACTS = fileURLToPath(new URL('../../.tmp/test-artifacts/', import.meta.url));
const redis = useRedis();
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

interface Task {
  kind: string;
  doomed?: boolean;
  note?: string;
}

/** Common desktop widths; below 1100 px the inspector moves under the tables. */
const WIDTHS = [1280, 1300, 1440, 1920];

// No skip when Chromium is missing: the prerequisite check (vitest globalSetup) stops the run first.
describe('dashboard in a browser', () => {
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
        payload: {
          kind: ['send-receipt', 'ship-order', 'nightly-report'][i % 3]!,
          // A long payload, as real ones are: its preview must not push the row's buttons away.
          ...(i === 0 ? { note: 'gift wrap, '.repeat(20) } : {}),
        },
        opts: {
          // Ids as applications make them (a uuid in it) are long too.
          id: i === 1 ? `order-${2000 + i}-7c9e6679-7425-40de-944b-e07fc1f90ae7` : `order-${2000 + i}`,
          delay: 60_000 + ((i * 7_919_000) % 3_480_000),
        },
      })),
    );

    const token = 'browser-test-token-0123456789';
    const dashboard = await startDashboard({ connection: redis.url(), port: 0, token, metrics });
    open.push(dashboard);
    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
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

    // The sign-in link carries the token in its fragment, which no server receives: the page's
    // script posts it, and the browser lands on the queue's page with the token gone.
    await page.goto(`${dashboard.url}queues/${name}#token=${token}`);
    await page.locator('#c-scheduled', { hasText: '30' }).waitFor({ timeout: 15_000 });
    expect(new URL(page.url()).pathname).toBe(`/queues/${name}`);
    expect(new URL(page.url()).search + new URL(page.url()).hash).toBe(''); // the token left the address bar
    expect(await page.locator('#c-dead').textContent()).toBe('2');
    expect(await page.locator('#c-active').textContent()).toBe('0');
    // The 10 that ran are kept as completed (a page of 10 rows); none was cancelled.
    expect(await page.locator('#c-completed').textContent()).toBe('10');
    expect(await page.locator('#c-cancelled').textContent()).toBe('0');
    await page.locator('#table-completed tbody tr[data-id]').nth(9).waitFor();
    await expect
      .poll(() => page.locator('#table-cancelled tbody').textContent())
      .toContain('no cancelled jobs');
    await page.locator('#table-dead tbody tr[data-id]').nth(1).waitFor();
    expect(await page.locator('#table-dead tbody tr[data-id]').count()).toBe(2);
    await expect
      .poll(() => page.locator('#table-dead').textContent())
      .toContain('card declined: insufficient funds');

    // The lateness chart's y axis in milliseconds (its jobs started a few ms late at most), not
    // uPlot's default '0,000 / 0,000 / 0'. Its labels are also its aria-label.
    const axis = page.locator('#chart-lateness .uplot[aria-label^="lateness chart"]');
    await axis.waitFor({ timeout: 15_000 });
    const labels = (await axis.getAttribute('aria-label'))!
      .replace(/^lateness chart, y axis: /, '')
      .split(' / ');
    expect(labels.length).toBeGreaterThan(1);
    for (const label of labels) expect(label).toMatch(/^\d[\d,]*(\.\d+)? (ms|s)$/);
    expect(new Set(labels).size, 'distinct ticks').toBe(labels.length);

    const firstDead = page.locator('#table-dead tbody tr[data-id]').first();
    const id = (await firstDead.getAttribute('data-id'))!;
    await firstDead.locator('button[data-action="retry"]').click();
    await page.locator('#toast', { hasText: `retried ${id}` }).waitFor({ timeout: 10_000 });
    await page.locator('#c-dead', { hasText: /^1$/ }).waitFor({ timeout: 10_000 });

    const r = inspector(redis.url());
    const keys = queueKeys(name);
    expect(await r.zcard(keys.dead)).toBe(1);
    expect(await r.zscore(keys.dead, id)).toBeNull();
    expect(await r.zscore(keys.waiting, id)).not.toBeNull();
    await r.quit();

    // The inspector shows a msgpack job's payload (decoded with the recorded codec).
    await page.locator('#table-scheduled tbody tr[data-id="order-2000"]').click();
    await expect.poll(() => page.locator('#inspector').textContent()).toContain('"kind": "send-receipt"');
    expect(await page.locator('#inspector').textContent()).not.toContain('cannot decode');

    // Inspect the remaining dead job, so the screenshot shows the inspector too.
    await page.locator('#table-dead tbody tr[data-id]').first().click();
    await page.locator('#inspector pre.bad').waitFor();
    expect(await page.locator('#inspector').textContent()).toContain('card declined');
    // Parts a job lacks (no result, no progress) leave nothing behind, not the text "null".
    expect(await page.locator('#inspector').textContent()).not.toContain('null');

    // Pause from the page: the badge shows, the button turns to Resume, Redis holds the pause.
    await page.locator('#pause-toggle', { hasText: 'Pause' }).click();
    await page.locator('#paused-badge').waitFor({ state: 'visible', timeout: 10_000 });
    await page.locator('#pause-toggle', { hasText: 'Resume' }).waitFor({ timeout: 10_000 });
    expect(await queue.isPaused()).toBe(true);
    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}dashboard.png`, fullPage: true });

    // With the inspector open, every width keeps the scheduled table's Cancel buttons clear of it.
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 1000 });
      const cancels = page.locator('#table-scheduled button[data-action="cancel"]');
      expect(await cancels.count()).toBe(10);
      const inspectorBox = (await page.locator('#inspector').boundingBox())!;
      for (const index of [0, 9]) {
        const button = cancels.nth(index);
        await onStableRow(async () => {
          await button.scrollIntoViewIfNeeded();
          expect(await button.isVisible()).toBe(true);
          const box = await button.boundingBox();
          if (!box) throw new Error(`Cancel ${index}: element detached (no bounding box)`);
          expect(box.x + box.width, `Cancel ${index} at ${width} px`).toBeLessThanOrEqual(inspectorBox.x);
          // A trial click runs Playwright's checks (visible, stable, not covered) without clicking.
          await button.click({ trial: true, timeout: 5_000 });
        });
      }
      await page.screenshot({ path: `${ARTIFACTS}dashboard-${width}.png` });
    }
    await page.locator('#pause-toggle', { hasText: 'Resume' }).click();
    await page.locator('#paused-badge').waitFor({ state: 'hidden', timeout: 10_000 });
    expect(await queue.isPaused()).toBe(false);
    // The one 401 is the sign-in page the #token= link first meets (no session yet).
    const signInPage = 'Failed to load resource: the server responded with a status of 401 (Unauthorized)';
    expect(problems.filter((p) => p === signInPage).length).toBeLessThanOrEqual(1);
    expect(problems.filter((p) => p !== signInPage)).toEqual([]);
  });

  it(
    'searches by id prefix and state, pages the results, and opens a result’s log lines in the inspector',
    { timeout: 90_000 },
    async () => {
      const name = uniqueQueue('search');
      const queue = new Queue<{ n: number }>(name, { connection: redis.url() });
      open.push(queue);
      const worker = new Worker<{ n: number }>(
        name,
        async (job) => {
          await job.log(`packed ${job.payload.n} boxes`);
          await job.log('handed to the courier');
        },
        { connection: redis.url(), keepCompleted: { count: 100, age: '1h' } },
      );
      worker.on('error', () => {});
      await queue.add({ n: 3 }, { id: 'ship-7' });
      await waitFor(async () => (await queue.get('ship-7'))?.state === 'completed', {
        what: 'ship-7 to complete',
      });
      await worker.close();
      await queue.addBulk(
        Array.from({ length: 12 }, (_, i) => ({
          payload: { n: i },
          opts: { id: `order-${String(i).padStart(2, '0')}`, delay: `${i + 1}m` },
        })),
      );
      await queue.add({ n: 0 }, { id: 'other', delay: '2m' });

      const dashboard = await startDashboard({ connection: redis.url(), port: 0 });
      open.push(dashboard);
      const browser: Browser = await chromium.launch({
        executablePath: CHROMIUM_PATH,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--no-first-run',
          '--disable-background-networking',
        ],
      });
      open.push(browser);
      const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(err.message));
      page.on('console', (msg) => {
        if (msg.type() === 'error') problems.push(msg.text());
      });
      await page.goto(`${dashboard.url}queues/${name}`);
      await page.locator('#c-scheduled', { hasText: '13' }).waitFor({ timeout: 15_000 });

      // An id prefix: the first page of ten, then the next two, then back.
      await page.locator('#search-form input[name="id"]').fill('order-');
      await page.locator('#search-form button[type="submit"]').click();
      const rows = page.locator('#table-search tbody tr[data-id]');
      await rows.nth(9).waitFor({ timeout: 10_000 });
      expect(await rows.count()).toBe(10);
      expect(await rows.first().getAttribute('data-id')).toBe('order-00');
      await page.locator('button[data-search="next"]').click();
      await page.locator('#table-search tbody tr[data-id="order-10"]').waitFor({ timeout: 10_000 });
      expect(await rows.count()).toBe(2);
      expect(await page.locator('[data-pageinfo="search"]').textContent()).toBe('page 2, the last');
      expect(await page.locator('button[data-search="next"]').isDisabled()).toBe(true);
      await page.locator('button[data-search="prev"]').click();
      await page.locator('#table-search tbody tr[data-id="order-00"]').waitFor({ timeout: 10_000 });

      // A state: the completed job; its row opens the inspector, which shows its log lines.
      await page.locator('#search-form input[name="id"]').fill('');
      await page.locator('#search-form select[name="state"]').selectOption('completed');
      await page.locator('#search-form button[type="submit"]').click();
      const found = page.locator('#table-search tbody tr[data-id="ship-7"]');
      await found.waitFor({ timeout: 10_000 });
      expect(await rows.count()).toBe(1);
      await found.click();
      const lines = page.locator('#inspector ol.log li');
      await lines.nth(1).waitFor({ timeout: 10_000 });
      expect(await lines.first().textContent()).toMatch(/^#1 \d\d:\d\d:\d\d\.\d{3} packed 3 boxes$/);
      expect(await lines.nth(1).textContent()).toContain('handed to the courier');
      expect(await page.locator('#inspector h3', { hasText: 'log (2 lines)' }).count()).toBe(1);

      // A filter the queue refuses: its message in the results, not a broken page.
      await page.locator('#search-form select[name="state"]').selectOption('');
      await page.locator('#search-form input[name="group"]').fill('acme');
      await page.locator('#search-form select[name="state"]').selectOption('dead');
      await page.locator('#search-form button[type="submit"]').click();
      await page
        .locator('#table-search tbody td.bad', { hasText: 'finished jobs are not kept by group' })
        .waitFor({ timeout: 10_000 });
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: `${ARTIFACTS}dashboard-search.png`, fullPage: true });
      // The refused search's 400 is the one console error.
      expect(problems.filter((p) => !/status of 400/.test(p))).toEqual([]);
    },
  );

  it(
    'shows a flow parent waiting for its children in its card, its table and the search, and cancels it with its children on click',
    { timeout: 90_000 },
    async () => {
      const name = uniqueQueue('flows');
      const queue = new Queue<string>(name, { connection: redis.url() });
      open.push(queue);
      await queue.addFlow({
        payload: 'monthly report',
        opts: { id: 'report-12', delay: '10m' },
        children: [
          { payload: 'sales', opts: { id: 'report-12-sales', delay: '1h' } },
          { payload: 'costs', opts: { id: 'report-12-costs', delay: '1h' } },
        ],
      });
      const token = 'browser-test-token-0123456789';
      const dashboard = await startDashboard({ connection: redis.url(), port: 0, token });
      open.push(dashboard);
      const browser: Browser = await chromium.launch({
        executablePath: CHROMIUM_PATH,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--no-first-run',
          '--disable-background-networking',
        ],
      });
      open.push(browser);
      const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(err.message));
      page.on('console', (msg) => {
        if (msg.type() === 'error') problems.push(msg.text());
      });
      await page.goto(`${dashboard.url}queues/${name}#token=${token}`);
      await page.locator('#c-waiting-children', { hasText: /^1$/ }).waitFor({ timeout: 15_000 });
      // The parent is not one of the scheduled: those are its two children.
      expect(await page.locator('#c-scheduled').textContent()).toBe('2');
      const row = page.locator('#table-waiting-children tbody tr[data-id="report-12"]');
      await row.waitFor({ timeout: 10_000 });
      expect(await row.textContent()).toContain('"monthly report"');
      expect(await page.locator('[data-count="waiting-children"]').textContent()).toBe('1');

      // The search box's state select has the state, and finds the parent alone.
      await page.locator('#search-form select[name="state"]').selectOption('waiting-children');
      await page.locator('#search-form button[type="submit"]').click();
      const found = page.locator('#table-search tbody tr[data-id]');
      await page.locator('#table-search tbody tr[data-id="report-12"]').waitFor({ timeout: 10_000 });
      expect(await found.count()).toBe(1);
      expect(await found.first().locator('span.state').textContent()).toBe('waiting-children');

      // Cancel from its row: the parent and its waiting children are cancelled.
      await onStableRow(() => row.locator('button[data-action="cancel"]').click());
      await page.locator('#toast', { hasText: 'cancelled report-12' }).waitFor({ timeout: 10_000 });
      await page.locator('#c-waiting-children', { hasText: /^0$/ }).waitFor({ timeout: 10_000 });
      await page.locator('#c-cancelled', { hasText: /^3$/ }).waitFor({ timeout: 10_000 });
      expect(await page.locator('#c-scheduled').textContent()).toBe('0');
      await expect
        .poll(() => page.locator('#table-waiting-children tbody').textContent())
        .toContain('no waiting-children jobs');
      for (const id of ['report-12', 'report-12-sales', 'report-12-costs']) {
        expect((await queue.get(id))?.state).toBe('cancelled');
      }
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: `${ARTIFACTS}dashboard-flows.png`, fullPage: true });
      // The one 401 is the sign-in page the #token= link first meets (no session yet).
      const signInPage = 'Failed to load resource: the server responded with a status of 401 (Unauthorized)';
      expect(problems.filter((p) => p !== signInPage)).toEqual([]);
    },
  );
});
