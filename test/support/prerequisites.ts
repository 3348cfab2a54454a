/**
 * The system tools the tests need, checked before any test runs (vitest globalSetup): on a machine
 * that lacks one, `npm test` stops within seconds with one message naming what is missing and the
 * one command that installs it, rather than failing tests one by one minutes later. No test skips
 * because a tool is missing.
 *
 * Also runnable on its own (`node --import tsx test/support/prerequisites.ts`): exit 0 when all is
 * there, else the message on stderr and exit 1. The PATH searched is the process's; the browser's
 * path is DELAYQ_CHROMIUM, default /usr/bin/chromium (where Debian's package puts it); the Python
 * that must import redis-py is DELAYQ_PYTHON, default /usr/bin/python3 (Debian's python3-redis
 * serves that interpreter).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the browser test finds Chromium. */
export const CHROMIUM_PATH = process.env['DELAYQ_CHROMIUM'] ?? '/usr/bin/chromium';

/** The Python the foreign-producer test runs; it must be able to `import redis`. */
export const PYTHON_PATH = process.env['DELAYQ_PYTHON'] ?? '/usr/bin/python3';

interface Tool {
  /** What to look for: a command on the PATH, or an absolute path. */
  command: string;
  /** The Debian package that provides it. */
  apt: string;
  /** Which tests need it. */
  why: string;
  /** A Python module the command (an interpreter) must be able to import. */
  pythonModule?: string;
}

const TOOLS: readonly Tool[] = [
  { command: 'redis-server', apt: 'redis-server', why: 'every integration test' },
  { command: 'redis-cli', apt: 'redis-server', why: 'cluster and protocol tests' },
  { command: 'openssl', apt: 'openssl', why: 'the TLS tests make certificates' },
  { command: CHROMIUM_PATH, apt: 'chromium', why: 'the dashboard browser test' },
  {
    command: PYTHON_PATH,
    apt: 'python3-redis',
    why: 'the Python producer test needs redis-py',
    pythonModule: 'redis',
  },
];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function found(tool: Tool, path: string): boolean {
  const { command, pythonModule } = tool;
  const present = command.includes('/')
    ? executable(command)
    : path.split(delimiter).some((dir) => dir !== '' && executable(join(dir, command)));
  if (!present || pythonModule === undefined) return present;
  return (
    spawnSync(command, ['-c', `import ${pythonModule}`], { stdio: 'ignore', timeout: 10_000 }).status === 0
  );
}

/** The message naming every missing tool and how to install them all, or null when none is missing. */
export function missingPrerequisites(path = process.env['PATH'] ?? ''): string | null {
  const missing = TOOLS.filter((tool) => !found(tool, path));
  if (missing.length === 0) return null;
  const packages = [...new Set(missing.map((tool) => tool.apt))].join(' ');
  const what = missing.map((tool) => `${tool.command} (${tool.why})`).join(', ');
  return (
    `delayq tests: missing ${what}. Install with: apt-get install ${packages} ` +
    '(see CONTRIBUTING.md, Set-up; DELAYQ_CHROMIUM and DELAYQ_PYTHON name other binaries)'
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
