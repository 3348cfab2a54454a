/**
 * The prerequisite check (test/support/prerequisites.ts) itself: run with a PATH and a Chromium path
 * that lack tools, `vitest run` stops before any test with one message naming each missing tool and
 * the apt-get line that installs it; the check passes only when every tool is there.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CHROMIUM_PATH, PYTHON_PATH } from '../support/prerequisites.js';
import { runCommand, type CommandResult } from '../support/run-command.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VITEST = join(ROOT, 'node_modules/vitest/vitest.mjs');
const CHECK = join(ROOT, 'test/support/prerequisites.ts');
const dir = mkdtempSync(join(tmpdir(), 'delayq-prereq-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A directory holding links to the real `tools` (found on this process's PATH) and nothing else. */
function binWith(name: string, tools: string[]): string {
  const bin = join(dir, name);
  const realPath = (process.env['PATH'] ?? '').split(delimiter);
  mkdirSync(bin);
  for (const tool of tools) {
    const from = realPath.map((d) => join(d, tool)).find((p) => existsSync(p));
    if (from === undefined)
      throw new Error(`${tool} not on this PATH (the global check should have said so)`);
    symlinkSync(from, join(bin, tool));
  }
  return bin;
}

function run(args: string[], env: Record<string, string>): Promise<CommandResult> {
  return runCommand(process.execPath, args, {
    cwd: ROOT,
    env: { HOME: process.env['HOME'] ?? tmpdir(), ...env },
    timeoutMs: 30_000,
  });
}

describe('prerequisite check', () => {
  it('stops `vitest run` before any test, with one message naming every missing tool', async () => {
    const empty = binWith('empty', []);
    const { code, stdout, stderr } = await run([VITEST, 'run', 'src/worker/partition-picker.test.ts'], {
      PATH: empty,
      DELAYQ_CHROMIUM: join(dir, 'no-chromium'),
      DELAYQ_PYTHON: join(dir, 'no-python'),
    });
    expect(code).toBe(1);
    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^delayq tests: missing redis-server \(.*\), redis-cli \(.*\), openssl \(.*\), .*no-chromium \(.*\), .*no-python \(.*\)\./,
    );
    expect(lines[0]).toContain('Install with: apt-get install redis-server openssl chromium python3-redis ');
    // Nothing ran: the check comes before the test files.
    expect(stdout).not.toMatch(/passed|failed/);
  });

  it('names only what is missing: redis-server alone', async () => {
    const bin = binWith('no-redis-server', ['redis-cli', 'openssl']);
    const { code, stderr } = await run(['--import', 'tsx', CHECK], {
      PATH: bin,
      DELAYQ_CHROMIUM: CHROMIUM_PATH,
      DELAYQ_PYTHON: PYTHON_PATH,
    });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(
      'delayq tests: missing redis-server (every integration test). Install with: apt-get install redis-server (see CONTRIBUTING.md, Set-up; DELAYQ_CHROMIUM and DELAYQ_PYTHON name other binaries)',
    );
  });

  it('names a missing Chromium, and passes once every tool is there', async () => {
    const bin = binWith('all-but-chromium', ['redis-server', 'redis-cli', 'openssl']);
    const env = { PATH: bin, DELAYQ_PYTHON: PYTHON_PATH };
    const missing = await run(['--import', 'tsx', CHECK], { ...env, DELAYQ_CHROMIUM: join(dir, 'nope') });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('apt-get install chromium ');
    // A Chromium that is present but not executable does not count either.
    const notExecutable = join(dir, 'chromium-not-executable');
    writeFileSync(notExecutable, '');
    expect((await run(['--import', 'tsx', CHECK], { ...env, DELAYQ_CHROMIUM: notExecutable })).code).toBe(1);
    const ok = await run(['--import', 'tsx', CHECK], { ...env, DELAYQ_CHROMIUM: CHROMIUM_PATH });
    expect(ok).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('names a Python that cannot import redis-py', async () => {
    const bin = binWith('all-but-redis-py', ['redis-server', 'redis-cli', 'openssl']);
    // An interpreter stand-in whose every import fails, as a python3 without python3-redis does.
    const noRedisPy = join(dir, 'python-without-redis');
    writeFileSync(noRedisPy, '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    const missing = await run(['--import', 'tsx', CHECK], {
      PATH: bin,
      DELAYQ_CHROMIUM: CHROMIUM_PATH,
      DELAYQ_PYTHON: noRedisPy,
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('python-without-redis (the Python producer test needs redis-py)');
    expect(missing.stderr).toContain('apt-get install python3-redis ');
  });
});
