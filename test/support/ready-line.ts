/**
 * Starting a test worker process: it prints `ready {"pid":…,"workerId":…}` on stdout once it runs.
 * Shared by the test workers (processes.ts) and the chaos workers (test/chaos/worker-handle.ts);
 * free of vitest, since the long chaos run uses it outside the test runner.
 */
import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';

/** What the ready line carries. */
export interface ReadyLine {
  pid: number;
  workerId: string;
}

type Child = ChildProcessByStdio<null, Readable, Readable>;
type Exit = Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

/** Kept for error messages; a chatty child must not grow the test's memory without bound. */
const MAX_OUTPUT = 64 * 1024;

/** Keep the first 64 KiB of the child's stdout and stderr; returns a reader of it. */
export function captureOutput(child: Child): () => string {
  let output = '';
  const capture = (chunk: Buffer): void => {
    if (output.length < MAX_OUTPUT) output += chunk.toString();
  };
  child.stdout.on('data', capture);
  child.stderr.on('data', capture);
  return () => output;
}

/**
 * Wait for `child`'s ready line. Rejects, with its output so far, when it does not print one
 * within `timeoutMs`, fails to spawn, or exits first.
 */
export function awaitReady(
  child: Child,
  exited: Exit,
  output: () => string,
  { what, timeoutMs }: { what: string; timeoutMs: number },
): Promise<ReadyLine> {
  return new Promise<ReadyLine>((resolve, reject) => {
    let pending = '';
    let settled = false;
    const finish = (err: Error | null, value?: ReadyLine): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      if (err) reject(err);
      else resolve(value!);
    };
    const onData = (chunk: Buffer): void => {
      pending += chunk.toString();
      const match = /^ready (\{.*\})$/m.exec(pending);
      if (match) finish(null, JSON.parse(match[1]!) as ReadyLine);
    };
    const timer = setTimeout(() => {
      finish(new Error(`${what} did not print ready within ${timeoutMs} ms; output:\n${output()}`));
    }, timeoutMs);
    child.stdout.on('data', onData);
    child.once('error', (err) => finish(new Error(`could not spawn the ${what}: ${err.message}`)));
    void exited.then(({ code, signal }) =>
      finish(new Error(`${what} exited (code ${code}, signal ${signal}) before ready; output:\n${output()}`)),
    );
  });
}
