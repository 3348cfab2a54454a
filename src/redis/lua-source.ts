/**
 * Reads a Lua script with its `--!include name.lua` lines replaced by src/scripts/includes/name.lua.
 * Used at run time, and by the build to ship the expanded sources in dist/scripts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The source of `dir/file` with includes expanded (recursively; a cycle is an error). */
export function expandLua(dir: string, file: string, including: readonly string[] = []): string {
  if (including.includes(file)) throw new Error(`Lua include cycle: ${[...including, file].join(' -> ')}`);
  const text = readFileSync(join(dir, file), 'utf8');
  return text.replace(/^--!include (\S+)\s*$/gm, (_line, name: string) =>
    expandLua(dir, join('includes', name), [...including, file]),
  );
}
