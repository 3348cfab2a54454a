/**
 * Makes docs/images/dashboard-flow.png, the README's picture of a flow (issue 33): an onboarding
 * parent that waits for its three document checks (two done, one still due in an hour), found by
 * a search for the checks' id prefix, and the parent in the inspector with its children's states.
 *
 * Like scripts/docs-screenshot-search.ts: a throwaway redis-server and headless Chromium driven by
 * playwright-core (DELAYQ_CHROMIUM, default /usr/bin/chromium). Run: npm run docs:screenshot
 */
import { mkdir } from 'node:fs/promises';
import { IMAGES_DIR, openDashboard, until, withRedis } from './screenshot-kit.js';
import { Queue, Worker } from '../src/index.js';

const OUT = `${IMAGES_DIR}dashboard-flow.png`;

interface Step {
  step: string;
  customer: string;
}

await withRedis(async (connection, closers) => {
  const name = 'onboarding';
  const queue = new Queue<Step>(name, { connection });
  closers.push(() => queue.close());
  const worker = new Worker<Step>(name, async (job) => ({ checked: job.payload.step }), {
    connection,
    keepCompleted: { count: 1_000, age: '1d' },
  });
  worker.on('error', () => {});
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  // Remind the customer a day after all three documents were checked: the passport check waits
  // for an hour, so the parent waits for its children.
  const check = (step: string, delay?: string) => ({
    payload: { step, customer: 'acme' },
    opts: { id: `check:acme-${step}`, ...(delay && { delay }) },
  });
  await queue.addFlow({
    payload: { step: 'welcome-reminder', customer: 'acme' },
    opts: { id: 'onboard:acme', delay: '1d' },
    children: [check('invoice'), check('contract'), check('passport', '1h')],
  });
  await until(async () => (await queue.counts()).completed === 2, 'the two due checks to complete');

  const page = await openDashboard({ connection, name, height: 1000 }, closers);
  await page.locator('#c-completed', { hasText: '2' }).waitFor({ timeout: 15_000 });
  await page.locator('#search-form input[name="id"]').fill('check:acme');
  await page.locator('#search-form button[type="submit"]').click();
  await page.locator('#table-search tbody tr[data-id]').nth(2).waitFor({ timeout: 10_000 });
  // A child, then its parent through the inspector's link: the flow's children and their states.
  await page.locator('#table-search tbody tr[data-id="check:acme-passport"]').click();
  await page.locator('#inspector a.job-link', { hasText: 'onboard:acme' }).click();
  await page.locator('#inspector ul.children li').nth(2).waitFor({ timeout: 10_000 });
  await page.waitForTimeout(300);
  await mkdir(IMAGES_DIR, { recursive: true });
  const top = (await page.locator('#search-panel').boundingBox())!.y - 12;
  await page.screenshot({ path: OUT, fullPage: true, clip: { x: 0, y: top, width: 1440, height: 560 } });
  console.log(`wrote ${OUT}`);
});
