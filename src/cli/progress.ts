/**
 * A progress bar on stderr for long operations, drawn only when stderr is a terminal (and not in
 * --json mode); otherwise silent, so pipes and logs stay clean.
 */

/** A progress reporter. */
export interface Progress {
  /** Set the amount done (and, when it became known or changed, the total). */
  update(done: number, total?: number): void;
  /** Erase the bar. */
  finish(): void;
}

const WIDTH = 28;
const FRAME_MS = 80;

/** A bar labelled `label` towards `total` (0: unknown), or a no-op when stderr is not a TTY or `quiet`. */
export function progress(label: string, total: number, quiet = false): Progress {
  const stream = process.stderr;
  if (quiet || !stream.isTTY) return { update: () => {}, finish: () => {} };
  let last = 0;
  let current = 0;
  let goal = total;
  const draw = (): void => {
    const ratio = goal > 0 ? Math.min(1, current / goal) : 0;
    const filled = Math.round(ratio * WIDTH);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(WIDTH - filled)}`;
    const count =
      goal > 0
        ? `${current.toLocaleString('en-US')}/${goal.toLocaleString('en-US')}`
        : current.toLocaleString('en-US');
    stream.write(`\r${label} ${bar} ${Math.round(ratio * 100)}% ${count}\u001b[K`);
  };
  return {
    update(done, newTotal) {
      current = done;
      if (newTotal !== undefined) goal = newTotal;
      const now = Date.now();
      if (now - last >= FRAME_MS || (goal > 0 && current >= goal)) {
        last = now;
        draw();
      }
    },
    finish() {
      stream.write('\r\u001b[K');
    },
  };
}
