/**
 * The system tools the tests need, checked before any test runs (vitest globalSetup): on a machine
 * that lacks one, `npm test` stops within seconds with one message naming what is missing and the
 * one command that installs it, rather than failing tests one by one minutes later. No test skips
 * because a tool is missing.
 *
 * Also runnable on its own (`node --import tsx test/support/prerequisites.ts`): exit 0 when all is
 * there, else the message on stderr and exit 1. The PATH searched is the process's; the browser's
 * path is DELAYQ_CHROMIUM, default /usr/bin/chromium (where Debian's package puts it).
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the browser test finds Chromium. */
export const CHROMIUM_PATH = process.env['DELAYQ_CHROMIUM'] ?? '/usr/bin/chromium';

interface Tool {
  /** What to look for: a command on the PATH, or an absolute path. */
  command: string;
  /** The Debian package that provides it. */
  apt: string;
  /** Which tests need it. */
  why: string;
}

const TOOLS: readonly Tool[] = [
  { command: 'redis-server', apt: 'redis-server', why: 'every integration test' },
  { command: 'redis-cli', apt: 'redis-server', why: 'cluster and protocol tests' },
  { command: 'openssl', apt: 'openssl', why: 'the TLS tests make certificates' },
  { command: CHROMIUM_PATH, apt: 'chromium', why: 'the dashboard browser test' },
];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function found(command: string, path: string): boolean {
  if (command.includes('/')) return executable(command);
  return path.split(delimiter).some((dir) => dir !== '' && executable(join(dir, command)));
}

/** The message naming every missing tool and how to install them all, or null when none is missing. */
export function missingPrerequisites(path = process.env['PATH'] ?? ''): string | null {
  const missing = TOOLS.filter((tool) => !found(tool.command, path));
  if (missing.length === 0) return null;
  const packages = [...new Set(missing.map((tool) => tool.apt))].join(' ');
  const what = missing.map((tool) => `${tool.command} (${tool.why})`).join(', ');
  return (
    `delayq tests: missing ${what}. Install with: apt-get install ${packages} ` +
    '(see README, Set-up; DELAYQ_CHROMIUM names another Chromium binary)'
  );
}

/** vitest globalSetup: stop the whole run, before any test file loads, when a tool is missing. */
export default function checkPrerequisites(): void {
  const message = missingPrerequisites();
  if (message === null) return;
  // One line and a plain exit: a thrown error would bury the message under vitest's stack trace.
  process.stderr.write(`\n${message}\n\n`);
  process.exit(1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) checkPrerequisites();
