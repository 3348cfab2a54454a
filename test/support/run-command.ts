/** Run a command to its end and collect what it printed: for tests that drive tools from outside. */
import { spawn } from 'node:child_process';

/** What a finished command left: its exit code (null when killed) and its output. */
export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` with `args`; killed (SIGKILL) after `timeoutMs`; never rejects on a non-zero exit. */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
