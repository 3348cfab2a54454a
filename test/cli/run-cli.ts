/**
 * Runs the real `delayq` entry point as a child process against a throwaway redis-server, and
 * collects its output and exit code. It runs the built `dist/cli/main.js`, the file the package's
 * `bin` names, so these tests also check the build; `buildOnce()` (in a beforeAll) builds it,
 * once per test run (whichever CLI test file asks first). Spawned processes are killed by pid after each test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

let built: Promise<void> | undefined;

/**
 * Build dist/ (tsc and assets) once per test run, whichever test file asks first: node starts a
 * built CLI far faster than tsx. Test files run in processes of their own, and a build per file
 * rewrote dist/ under another file's running CLI (seen once: a handler.js already rebuilt, importing
 * a page.js not yet written). So the first file of a run to get here builds, under a marker
 * directory named by the run (the vitest process, every test process's parent); the others wait
 * for its `done` (or `failed`) file.
 */
export function buildOnce(): Promise<void> {
  built ??= buildOncePerRun();
  return built;
}

/** This checkout's markers in the temp directory: one per test run. */
const MARKER_PREFIX = `delayq-test-build-${createHash('sha1').update(ROOT).digest('hex').slice(0, 12)}-`;
const MARKER = join(tmpdir(), `${MARKER_PREFIX}${process.ppid}`);
const BUILD_WAIT_MS = 180_000;

async function buildOncePerRun(): Promise<void> {
  try {
    mkdirSync(MARKER);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return waitForBuild();
  }
  // Earlier runs' markers of this checkout: their runs are over.
  for (const name of readdirSync(tmpdir())) {
    const path = join(tmpdir(), name);
    if (name.startsWith(MARKER_PREFIX) && path !== MARKER) rmSync(path, { recursive: true, force: true });
  }
  try {
    await runBuild();
  } catch (err) {
    writeFileSync(join(MARKER, 'failed'), String(err));
    throw err;
  }
  writeFileSync(join(MARKER, 'done'), '');
}

async function waitForBuild(): Promise<void> {
  const deadline = Date.now() + BUILD_WAIT_MS;
  while (Date.now() < deadline) {
    if (existsSync(join(MARKER, 'done'))) return;
    if (existsSync(join(MARKER, 'failed'))) throw new Error(readFileSync(join(MARKER, 'failed'), 'utf8'));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`dist/ build by another test file of this run not done within ${BUILD_WAIT_MS / 1000} s`);
}

function runBuild(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'build'], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`npm run build failed (${code}): ${stderr}`)),
    );
  });
}

/** The outcome of a finished CLI run. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A CLI process that is still running. */
export interface CliProcess {
  readonly child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited. */
  readonly done: Promise<CliResult>;
}

const live = new Set<ChildProcess>();
afterEach(() => {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  live.clear();
});

/** The environment for a child: REDIS_URL set, colours not forced, nothing from the parent's NO_COLOR. */
function childEnv(redisUrl: string | undefined, env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  delete base['FORCE_COLOR'];
  delete base['NO_COLOR'];
  delete base['REDIS_URL'];
  delete base['DELAYQ_DASHBOARD_TOKEN'];
  if (redisUrl !== undefined) base['REDIS_URL'] = redisUrl;
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return base;
}

/** Start `delayq ...args`. */
export function startCli(
  args: string[],
  { redisUrl, env = {} }: { redisUrl?: string; env?: Record<string, string | undefined> } = {},
): CliProcess {
  const child = spawn(process.execPath, [MAIN, ...args], {
    cwd: ROOT,
    env: childEnv(redisUrl, env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<CliResult>((resolve) => {
    child.once('close', (code, signal) => {
      live.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, stdout: () => stdout, stderr: () => stderr, done };
}

/** Run `delayq ...args` to the end. */
export function runCli(
  args: string[],
  options: { redisUrl?: string; env?: Record<string, string | undefined> } = {},
): Promise<CliResult> {
  return startCli(args, options).done;
}

/** Run `delayq ...args` under a pseudo-terminal (util-linux `script`), so stdout and stderr are TTYs. */
export function runCliOnTty(args: string[], redisUrl: string): Promise<CliResult> {
  const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, MAIN, ...args].map(quote).join(' ');
  const child = spawn('script', ['-qefc', command, '/dev/null'], {
    cwd: ROOT,
    env: childEnv(redisUrl, { TERM: 'xterm-256color' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => {
    child.once('close', (code, signal) => {
      live.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
