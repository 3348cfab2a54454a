/**
 * Loads the Lua scripts from src/scripts (shipped as files beside the build), resolves their
 * `--!include` lines, and runs them by SHA with a fallback to the source when the server has
 * forgotten them (restart, failover, SCRIPT FLUSH).
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Cluster } from 'ioredis';
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

/** A script's ARGV as ioredis takes it. */
export type ScriptArgv = ReadonlyArray<string | number | Buffer>;

/**
 * ARGV, or a function that builds it at each send (after a NOSCRIPT too): for values that depend
 * on the moment the command is written, such as add's delay counted from the add() call.
 */
export type ScriptArgs = ScriptArgv | (() => ScriptArgv);

function argvNow(args: ScriptArgs): ScriptArgv {
  return typeof args === 'function' ? args() : args;
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
  args: ScriptArgs,
): Promise<Reply> {
  try {
    try {
      return (await client.callBuffer('EVALSHA', s.sha, keys.length, ...keys, ...argvNow(args))) as Reply;
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return (await client.callBuffer('EVAL', s.source, keys.length, ...keys, ...argvNow(args))) as Reply;
    }
  } catch (err) {
    throw mapScriptError(err, s.name);
  }
}

/** How many replicas must acknowledge a write, and how long to wait for them. */
export interface ReplicaWait {
  replicas: number;
  timeoutMs: number;
}

/** What runScriptAndWait got: the script's reply, and how many replicas hold the write. */
export interface ReplicatedReply {
  reply: Reply;
  /** Replicas that acknowledged (WAIT's reply); 0 when WAIT itself failed (see waitError). */
  replicated: number;
  /** Why WAIT failed after the script ran, if it did: replication is then unconfirmed. */
  waitError: Error | null;
}

// Replies that mean the script did not run where it was sent (a stale slot map mid-failover, a
// node loading or down), so sending it again cannot apply it twice.
const NOT_RUN = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN|LOADING|MASTERDOWN)\b/;
const NOT_RUN_ATTEMPTS = 16;
const NOT_RUN_PAUSE_MS = 100;

/**
 * Run `s` like runScript, then WAIT for `wait.replicas`. WAIT counts the replicas that have
 * everything *this connection* wrote, so it must follow the script on the same connection: both go
 * in one pipeline, which ioredis sends whole to one node, the master of the keys' slot on a
 * Cluster. ioredis does not follow a redirection for a pipeline whose commands did not all fail
 * alike, so those are retried here, after refreshing the slot map.
 */
export async function runScriptAndWait(
  client: RedisClient,
  s: Script,
  keys: readonly string[],
  args: ScriptArgs,
  wait: ReplicaWait,
): Promise<ReplicatedReply> {
  let bySource = false;
  for (let attempt = 1; ; attempt++) {
    const pipeline = client.pipeline();
    const argv = argvNow(args);
    if (bySource) pipeline.callBuffer('EVAL', s.source, keys.length, ...keys, ...argv);
    else pipeline.callBuffer('EVALSHA', s.sha, keys.length, ...keys, ...argv);
    pipeline.call('WAIT', wait.replicas, wait.timeoutMs);
    const results = (await pipeline.exec()) ?? [];
    const [scriptError, reply] = results[0] ?? [new Error('no reply to the script'), null];
    const [waitError, count] = results[1] ?? [new Error('no reply to WAIT'), null];
    if (scriptError) {
      if (!bySource && scriptError.message.startsWith('NOSCRIPT')) {
        bySource = true;
        continue;
      }
      if (NOT_RUN.test(scriptError.message) && attempt < NOT_RUN_ATTEMPTS) {
        if (client instanceof Cluster)
          await new Promise<void>((resolve) => client.refreshSlotsCache(() => resolve()));
        await new Promise((resolve) => setTimeout(resolve, NOT_RUN_PAUSE_MS * Math.min(attempt, 5)));
        continue;
      }
      throw mapScriptError(scriptError, s.name);
    }
    return { reply: reply as Reply, replicated: waitError ? 0 : Number(count), waitError: waitError ?? null };
  }
}
