/**
 * Loads the Lua scripts from src/scripts (shipped as files beside the build), resolves their
 * `--!include` lines, and runs them by SHA with a fallback to the source when the server has
 * forgotten them (restart, failover, SCRIPT FLUSH).
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { RedisClient } from './connection.js';
import { expandLua } from './lua-source.js';
import { mapScriptError } from './script-errors.js';

/** A script ready to run: its resolved source and SHA1. */
export interface Script {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

const scriptsDir = fileURLToPath(new URL('../scripts/', import.meta.url));
const cache = new Map<string, Script>();

/** The script `name` (file `src/scripts/<name>.lua`), loaded once per process. */
export function script(name: string): Script {
  let loaded = cache.get(name);
  if (!loaded) {
    const source = expandLua(scriptsDir, `${name}.lua`);
    loaded = { name, source, sha: createHash('sha1').update(source).digest('hex') };
    cache.set(name, loaded);
  }
  return loaded;
}

/** A reply as ioredis gives it for *Buffer commands: bulk strings as Buffers. */
export type Reply = Buffer | number | null | Reply[];

/**
 * Run `script` with `keys` and `args`: EVALSHA first, EVAL when the server answers NOSCRIPT. Named
 * script errors (`DELAYQ_...`) are turned into their error classes.
 */
export async function runScript(
  client: RedisClient,
  s: Script,
  keys: readonly string[],
  args: ReadonlyArray<string | number | Buffer>,
): Promise<Reply> {
  try {
    try {
      return (await client.callBuffer('EVALSHA', s.sha, keys.length, ...keys, ...args)) as Reply;
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return (await client.callBuffer('EVAL', s.source, keys.length, ...keys, ...args)) as Reply;
    }
  } catch (err) {
    throw mapScriptError(err, s.name);
  }
}
