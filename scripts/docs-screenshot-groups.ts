/**
 * Makes docs/images/dashboard-groups.png, the README's picture of the groups panel (issue 29): a
 * webhook queue with one group per customer, the top groups by backlog with running / limit, one
 * group paused from its button, and a grouped job in the inspector showing its group.
 *
 * Like scripts/docs-screenshot.ts: a throwaway redis-server and headless Chromium driven by
 * playwright-core (DELAYQ_CHROMIUM, default /usr/bin/chromium). Run: npm run docs:screenshot
 */
import { mkdir } from 'node:fs/promises';
import { IMAGES_DIR, openDashboard, until, withRedis } from './screenshot-kit.js';
import { Queue, Worker } from '../src/index.js';

const OUT_DIR = IMAGES_DIR;
const OUT = `${OUT_DIR}dashboard-groups.png`;

interface Delivery {
  event: string;
  url: string;
}

await withRedis(async (connection, closers) => {
  const name = 'webhooks';
  const queue = new Queue<Delivery>(name, { connection });
  closers.push(() => queue.close());

  // Deliveries to a slow receiver hold their slot until the screenshot is taken.
  let finish: () => void = () => {};
  const held = new Promise<void>((resolve) => (finish = resolve));
  const worker = new Worker<Delivery>(name, async () => held, {
    connection,
    concurrency: 8,
    groups: { concurrency: 2 },
  });
  worker.on('error', () => {});
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  await queue.configure({ groups: { concurrency: 2, limit: { max: 20, per: '1s' } } });

  // A backlog per customer, biggest first; some deliveries are retries due later.
  const customers: Array<[string, number]> = [
    ['cust-acme', 184],
    ['cust-globex', 97],
    ['cust-initech', 41],
    ['cust-umbrella', 12],
    ['cust-hooli', 5],
    ['cust-stark', 2],
  ];
  for (const [customer, count] of customers) {
    await queue.addBulk(
      Array.from({ length: count }, (_, i) => ({
        payload: {
          event: i % 3 === 0 ? 'invoice.paid' : 'order.created',
          url: `https://${customer}.example/hooks`,
        },
        opts: {
          group: customer,
          id: `${customer}:${1000 + i}`,
          ...(i % 4 === 3 && { delay: 60_000 + i * 9_000 }),
        },
      })),
    );
  }
  await until(async () => (await queue.counts()).active >= 8, 'the worker holding 8 deliveries');

  const page = await openDashboard({ connection, name, height: 1200 }, closers);
  await page.locator('#table-groups tbody tr').nth(5).waitFor({ timeout: 15_000 });
  // Pause a customer from its button, as an operator would when their endpoint is down.
  const initech = page.locator('#table-groups tbody tr', { hasText: 'cust-initech' });
  await initech.locator('button', { hasText: 'Pause' }).click();
  await initech.locator('.badge.paused').waitFor({ timeout: 10_000 });
  if (!(await queue.groups.list()).find((g) => g.group === 'cust-initech')?.paused) {
    throw new Error('docs:screenshot: the Pause button did not pause the group');
  }
  // A grouped job in the inspector: its group where a plain job shows its priority.
  await page.locator('#table-scheduled tbody tr[data-id]').first().click();
  await until(
    async () => /group\s*cust-/.test((await page.locator('#inspector').textContent()) ?? ''),
    'the inspector showing the job’s group',
  );
  const inspector = (await page.locator('#inspector').textContent()) ?? '';
  if (inspector.includes('null'))
    throw new Error(`docs:screenshot: the inspector shows "null": ${inspector}`);
  // The pause's toast goes after 3.5 s; the picture is of the page, not of it.
  await page.locator('#toast.show').waitFor({ state: 'detached', timeout: 10_000 });
  // ... and its fade-out transition ends.
  await page.waitForTimeout(600);
  await mkdir(OUT_DIR, { recursive: true });
  await page.screenshot({ path: OUT, fullPage: true });
  console.log(`wrote ${OUT}`);
  finish();
});
