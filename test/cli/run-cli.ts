/**
 * Runs the real `delayq` entry point as a child process against a throwaway redis-server, and
 * collects its output and exit code. It runs the built `dist/cli/main.js`, the file the package's
 * `bin` names, so these tests also check the build; `buildOnce()` (in a beforeAll) builds it,
 * once per test run. Spawned processes are killed by pid after each test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

let built: Promise<void> | undefined;

/** Build dist/ (tsc and assets) once for this process; node starts a built CLI far faster than tsx. */
export function buildOnce(): Promise<void> {
  built ??= new Promise((resolve, reject) => {
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
  return built;
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
