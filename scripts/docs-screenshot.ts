/**
 * Makes docs/images/dashboard-control.png, the README's picture of issue 15's controls: a paused
 * queue (the badge, and the Pause button turned to Resume) and a running job's progress in the job
 * inspector, beside completed jobs with their kept results, a cancelled one and a dead one.
 *
 * Everything runs on a throwaway redis-server (never the machine's 6379) and headless Chromium
 * driven by playwright-core: DELAYQ_CHROMIUM, default /usr/bin/chromium (Debian's package).
 * Run: npm run docs:screenshot
 */
import { mkdir } from 'node:fs/promises';
import { IMAGES_DIR, openDashboard, until, withRedis } from './screenshot-kit.js';
import { Queue, Worker } from '../src/index.js';
import { producerOf } from '../src/definition/producer.js';
import { DelayqMetrics } from '../src/metrics/metrics.js';
import { queueKeys } from '../src/redis/keys.js';

const OUT_DIR = IMAGES_DIR;
const OUT = `${OUT_DIR}dashboard-control.png`;

interface Task {
  kind: string;
  rows?: number;
  card?: string;
  /** Keep running (reporting progress) until the screenshot is taken. */
  hold?: boolean;
}

await withRedis(async (connection, closers) => {
  const name = 'imports';
  const metrics = new DelayqMetrics();
  const queue = new Queue<Task>(name, { connection });
  closers.push(() => queue.close());
  metrics.observeQueue(queue);

  // One job holds its slot, reporting progress, until the screenshot is taken; the others end at once.
  let finish: () => void = () => {};
  const held = new Promise<void>((resolve) => (finish = resolve));
  const worker = new Worker<Task>(
    name,
    async (job) => {
      if (job.payload.kind === 'card-charge') throw new Error('card declined: insufficient funds');
      if (job.payload.hold) {
        await job.progress({ rows: 41_200, of: job.payload.rows, stage: 'validating' });
        await held;
      }
      return { ok: true, rows: job.payload.rows ?? 0 };
    },
    { connection, concurrency: 4, keepCompleted: { count: 100 } },
  );
  worker.on('error', () => {});
  closers.push(() => worker.close({ timeoutMs: 2_000 }));

  // History: imports that completed (with results), a charge that died, an import cancelled while
  // it waited. The imports come in four waves a counter flush apart: the throughput chart shows
  // the differences between the per-second snapshots, so a first flush alone would show nothing.
  const counters = queueKeys(name).counters;
  for (let wave = 0; wave < 4; wave++) {
    await queue.addBulk(
      [0, 1].map((k) => {
        const i = wave * 2 + k;
        return { payload: { kind: 'csv-import', rows: 1_000 * (i + 1) }, opts: { id: `import-${1000 + i}` } };
      }),
    );
    await until(
      async () => Number(await producerOf(queue).context.client.hget(counters, 'completed')) >= wave * 2 + 2,
      `wave ${wave + 1} of the imports in the counters`,
    );
  }
  await queue.add({ kind: 'card-charge', card: '**** 4242' }, { id: 'charge-77', attempts: 1 });
  await queue.add({ kind: 'csv-import', rows: 5_000 }, { id: 'import-2001', delay: '2h' });
  await queue.cancel('import-2001');
  await until(async () => (await queue.counts()).dead === 1, 'the dead charge');

  // The running job, reporting progress; then jobs that fall due while the queue is paused.
  await queue.add({ kind: 'csv-import', rows: 250_000, hold: true }, { id: 'import-3000' });
  await until(async () => (await queue.get('import-3000'))?.progress !== undefined, 'the progress report');
  await queue.addBulk(
    Array.from({ length: 12 }, (_, i) => ({
      payload: { kind: i % 3 === 0 ? 'nightly-report' : 'csv-import', rows: 2_000 },
      opts: { id: `import-${4000 + i}`, delay: 20_000 + i * 290_000, ...(i % 4 === 1 && { priority: -5 }) },
    })),
  );

  const page = await openDashboard({ connection, name, height: 1100, metrics }, closers);
  await page.locator('#c-active', { hasText: /^1$/ }).waitFor({ timeout: 15_000 });
  // Pause from the page, as an operator would: the badge shows and the button turns to Resume.
  await page.locator('#pause-toggle', { hasText: 'Pause' }).click();
  await page.locator('#paused-badge').waitFor({ state: 'visible', timeout: 10_000 });
  await page.locator('#pause-toggle', { hasText: 'Resume' }).waitFor({ timeout: 10_000 });
  if (!(await queue.isPaused())) throw new Error('docs:screenshot: the Pause button did not pause the queue');
  // The running job in the inspector, with its progress.
  await page.locator('#table-active tbody tr[data-id="import-3000"]').click();
  await until(
    async () => ((await page.locator('#inspector').textContent()) ?? '').includes('41200'),
    "the inspector showing the running job's progress",
  );
  const inspector = (await page.locator('#inspector').textContent()) ?? '';
  if (inspector.includes('null'))
    throw new Error(`docs:screenshot: the inspector shows "null": ${inspector}`);
  await page.locator('#table-completed tbody tr[data-id]').nth(7).waitFor();
  await mkdir(OUT_DIR, { recursive: true });
  await page.screenshot({ path: OUT, fullPage: true });
  console.log(`wrote ${OUT}`);
  finish();
});
