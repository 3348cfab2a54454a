/**
 * What the docs:screenshot scripts share (scripts/docs-screenshot*.ts): where the pictures go, the
 * dashboard token they sign in with, waiting for a state, and headless Chromium started the way
 * this machine's closed network needs (no background networking), a throwaway redis-server, and
 * the dashboard open in a signed-in page.
 */
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startDashboard } from '../src/dashboard/server.js';
import type { DelayqMetrics } from '../src/metrics/metrics.js';
import { startRedis } from '../src/testing/redis-server.js';

export const IMAGES_DIR = fileURLToPath(new URL('../docs/images/', import.meta.url));
export const SCREENSHOT_TOKEN = 'docs-screenshot-token-0123456789';

/** Poll `check` every 50 ms until it holds; throw naming `what` after `timeoutMs`. */
export async function until(
  check: () => Promise<boolean> | boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`docs:screenshot: gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Headless Chromium: DELAYQ_CHROMIUM, default /usr/bin/chromium (Debian's package). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env['DELAYQ_CHROMIUM'] ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
    ],
  });
}

/** What to close when a screenshot is taken (or fails), closed in reverse order. */
export type Closers = Array<() => Promise<unknown>>;

/**
 * Run `make` against a throwaway redis-server (never the machine's 6379), then close everything
 * `make` pushed onto its closers, newest first, and stop the server, whether `make` threw or not.
 */
export async function withRedis(
  make: (connection: string, closers: Closers) => Promise<void>,
): Promise<void> {
  const server = await startRedis();
  const closers: Closers = [];
  try {
    await make(server.url, closers);
  } finally {
    for (const close of closers.reverse()) await close().catch(() => {});
    await server.stop();
  }
}

/** The dashboard on `connection`, signed in with SCREENSHOT_TOKEN, open at queue `name` in a page `height` px tall. */
export async function openDashboard(
  {
    connection,
    name,
    height,
    metrics,
  }: { connection: string; name: string; height: number; metrics?: DelayqMetrics },
  closers: Closers,
): Promise<Page> {
  const dashboard = await startDashboard({
    connection,
    port: 0,
    token: SCREENSHOT_TOKEN,
    ...(metrics && { metrics }),
  });
  closers.push(() => dashboard.close());
  const browser = await launchChromium();
  closers.push(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1440, height } });
  await page.goto(`${dashboard.url}queues/${name}#token=${SCREENSHOT_TOKEN}`);
  return page;
}
