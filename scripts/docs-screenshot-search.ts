/**
 * Makes docs/images/dashboard-search.png, the README's picture of the search box (issue 33): an
 * orders queue searched by id prefix and state, the results page, and a result in the inspector
 * with the log lines its attempts wrote (job.log), a retried attempt's and the last one's.
 *
 * Like scripts/docs-screenshot.ts: a throwaway redis-server and headless Chromium driven by
 * playwright-core (DELAYQ_CHROMIUM, default /usr/bin/chromium). Run: npm run docs:screenshot
 */
import { mkdir } from 'node:fs/promises';
import { IMAGES_DIR, openDashboard, until, withRedis } from './screenshot-kit.js';
import { Queue, Worker } from '../src/index.js';

const OUT_DIR = IMAGES_DIR;
const OUT = `${OUT_DIR}dashboard-search.png`;

interface Order {
  customer: string;
  items: number;
}

await withRedis(async (connection, closers) => {
  const name = 'orders';
  const queue = new Queue<Order>(name, { connection });
  closers.push(() => queue.close());
  // Orders run now: each logs its steps; the courier's API fails the first try of a few.
  const worker = new Worker<Order>(
    name,
    async (job) => {
      await job.log(`reserved ${job.payload.items} items for ${job.payload.customer}`);
      if (job.payload.items % 4 === 0 && job.attempt === 1) {
        await job.log('courier API answered 503; retrying');
        throw new Error('courier API answered 503');
      }
      await job.log(`label printed, parcel ${job.id.replace('order:', 'P-')}`);
      await job.log('handed to the courier');
      return { shipped: true };
    },
    { connection, concurrency: 4, keepCompleted: { count: 1_000, age: '1d' } },
  );
  worker.on('error', () => {});
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  const customers = ['acme', 'globex', 'initech', 'umbrella', 'hooli'];
  await queue.addBulk(
    Array.from({ length: 24 }, (_, i) => ({
      payload: { customer: customers[i % 5]!, items: (i % 7) + 1 },
      opts: { id: `order:2027-${String(100 + i)}`, backoff: { type: 'fixed' as const, delay: 300 } },
    })),
  );
  await until(async () => (await queue.counts()).completed === 24, 'the 24 orders to complete');
  // And tomorrow's orders, waiting.
  await queue.addBulk(
    Array.from({ length: 30 }, (_, i) => ({
      payload: { customer: customers[i % 5]!, items: (i % 5) + 1 },
      opts: { id: `order:2027-${String(200 + i)}`, delay: 3_600_000 + i * 60_000 },
    })),
  );

  const page = await openDashboard({ connection, name, height: 1000 }, closers);
  await page.locator('#c-completed', { hasText: '24' }).waitFor({ timeout: 15_000 });
  await page.locator('#search-form input[name="id"]').fill('order:2027-1');
  await page.locator('#search-form select[name="state"]').selectOption('completed');
  await page.locator('#search-form button[type="submit"]').click();
  await page.locator('#table-search tbody tr[data-id]').nth(9).waitFor({ timeout: 10_000 });
  // A job that was retried: its two attempts' lines.
  await page.locator('#table-search tbody tr[data-id="order:2027-103"]').click();
  await page.locator('#inspector ol.log li').nth(4).waitFor({ timeout: 10_000 });
  await page.waitForTimeout(300);
  await mkdir(OUT_DIR, { recursive: true });
  // The search panel and the inspector beside it, not the charts above.
  const top = (await page.locator('#search-panel').boundingBox())!.y - 12;
  await page.screenshot({ path: OUT, fullPage: true, clip: { x: 0, y: top, width: 1440, height: 640 } });
  console.log(`wrote ${OUT}`);
});
