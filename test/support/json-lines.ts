/**
 * Ledgers of test worker processes are JSON lines appended one write per entry, so a process
 * killed mid-write leaves at most one partial last line; readers skip it.
 */
import { existsSync, readFileSync } from 'node:fs';

/** Parse a JSON-lines file: one value per complete line; a missing file is empty. */
export function readJsonLines<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  const text = readFileSync(path, 'utf8');
  const complete = text.slice(0, text.lastIndexOf('\n') + 1);
  return complete
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as T);
}
