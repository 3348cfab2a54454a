/**
 * What the docs:screenshot scripts share (scripts/docs-screenshot*.ts): where the pictures go, the
 * dashboard token they sign in with, waiting for a state, and headless Chromium started the way
 * this machine's closed network needs (no background networking).
 */
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

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
