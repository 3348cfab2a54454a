/**
 * Loads the Lua scripts from src/scripts (shipped as files beside the build), resolves their
 * `--!include` lines, and runs them: as FCALL of the delayq function library where the server has
 * functions (Redis >= 7.0), loading the library when the server lacks it; otherwise by SHA with a
 * fallback to the source when the server has forgotten them (restart, failover, SCRIPT FLUSH).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Cluster } from 'ioredis';
import type { RedisClient } from './connection.js';
import { buildLibrary, LIBRARY_FILE, parseLibrary, type FunctionLibrary } from './function-library.js';
import { expandLua } from './lua-source.js';
import { mapScriptError } from './script-errors.js';
import {
  canPrepare,
  commandHead,
  plainArgs,
  sendPrepared,
  type CommandHead,
  type PreparedArg,
} from './prepared-command.js';

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

/** A script's ARGV as ioredis takes it, or with runs of arguments encoded beforehand (RespRun). */
export type ScriptArgv = readonly PreparedArg[];

/**
 * KEYS a script is called with again and again (a worker's claims): the command's head, up to the
 * last key, is encoded once per function or SHA and written as it is (prepared-command.ts).
 */
export class FixedKeys {
  private readonly heads = new Map<string, CommandHead>();

  constructor(readonly list: readonly string[]) {}

  /** The head `name target numkeys ...keys`; `target` is a function name or a SHA, never both alike. */
  head(name: 'FCALL' | 'EVALSHA', target: string): CommandHead {
    let head = this.heads.get(target);
    if (!head) {
      head = commandHead(name, target, this.list);
      this.heads.set(target, head);
    }
    return head;
  }
}

/** A script's KEYS: a list, or FixedKeys for a call made again and again with the same ones. */
export type ScriptKeys = readonly string[] | FixedKeys;

function keyList(keys: ScriptKeys): readonly string[] {
  return keys instanceof FixedKeys ? keys.list : keys;
}

/** Send `name target numkeys keys... argv...`, from prepared heads where the keys and the client allow. */
function send(
  client: RedisClient,
  name: 'FCALL' | 'EVALSHA' | 'EVAL',
  target: string,
  keys: ScriptKeys,
  argv: ScriptArgv,
): Promise<Reply> {
  // EVAL is the rare NOSCRIPT path: its head holds the whole source, not worth keeping.
  if (keys instanceof FixedKeys && name !== 'EVAL' && canPrepare(client)) {
    return sendPrepared(client, keys.head(name, target), argv) as Promise<Reply>;
  }
  const list = keyList(keys);
  return client.callBuffer(name, target, list.length, ...list, ...plainArgs(argv)) as Promise<Reply>;
}

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
 * How scripts run: 'auto' uses functions where the server has them, 'eval' always EVALSHA. An
 * internal switch, for benchmarks comparing the two and for turning functions off if they misbehave.
 */
export type ScriptTransport = 'auto' | 'eval';

let transport: ScriptTransport = 'auto';

/** Set how scripts run from now on (connections that already chose FCALL keep it). */
export function setScriptTransport(t: ScriptTransport): void {
  transport = t;
}

let library: FunctionLibrary | undefined;

/**
 * The function library, built once per process: from the sources and includes in src/scripts,
 * or, in the build (whose dist/scripts hold expanded scripts), from the file the build made.
 */
export function functionLibrary(): FunctionLibrary {
  if (!library) {
    library = existsSync(join(scriptsDir, 'includes'))
      ? buildLibrary(scriptsDir)
      : parseLibrary(readFileSync(join(scriptsDir, LIBRARY_FILE), 'utf8'));
  }
  return library;
}

// Per client: 'fcall' once a server answered an FCALL or loaded the library, 'eval' once it showed
// it has no functions (older than 7.0, FUNCTION or FCALL renamed away or not permitted). Decided by
// the first call, so a server without functions costs one refused FCALL per connection, not one
// per call. A client that never decided (its first call failed otherwise) asks again, and one
// whose server stops having functions (a failover to an older node) turns to EVALSHA for good.
const chosen = new WeakMap<RedisClient, 'fcall' | 'eval'>();
const loading = new WeakMap<RedisClient, Promise<boolean>>();

// The server has no FCALL or FUNCTION: renamed away, older than 7.0, or denied to this user.
const NO_FUNCTIONS = /^(ERR unknown command|NOPERM\b.*\brun the) ['`](fcall|function)\b/i;
const FUNCTION_NOT_FOUND = /^ERR Function not found/;
const UNLOADABLE = /^ERR Error (compiling|registering)/;
// Redis refuses a function that may write, whole, while used memory is over maxmemory; an EVAL
// script runs until its first write that may grow memory, so a claim or fail whose first write
// frees memory (an ack's ZREM, a ZPOPMIN) drains a full Redis. Such a call goes by EVALSHA, to
// keep that; it ran nothing (the refusal comes before the function starts).
const REFUSED_OOM = /^OOM /;

function message(err: unknown): string {
  return err instanceof Error ? err.message : '';
}

function useFunctions(client: RedisClient): boolean {
  return transport === 'auto' && chosen.get(client) !== 'eval';
}

/**
 * FUNCTION LOAD the library where `client` sends commands: on a Cluster, on every primary (each
 * keeps its own functions, and any of them may serve a queue's slot; replicas get it through
 * replication). One load at a time per client. True when the library is there now; false when the
 * server has no functions, and the client then runs scripts by EVALSHA from now on.
 */
async function loadLibrary(client: RedisClient): Promise<boolean> {
  let pending = loading.get(client);
  if (!pending) {
    pending = (async () => {
      const lib = functionLibrary();
      const nodes = client instanceof Cluster ? client.nodes('master') : [client];
      let loaded = true;
      await Promise.all(
        nodes.map(async (node) => {
          try {
            await node.call('FUNCTION', 'LOAD', lib.source);
          } catch (err) {
            // Another client (or delayq process of this version) loaded it first: the same source.
            if (message(err).includes(`'${lib.name}' already exists`)) return;
            // A library this server cannot compile (a Lua limit of an odd build): would otherwise
            // cost a refused FCALL and a refused load before every call.
            if (NO_FUNCTIONS.test(message(err)) || UNLOADABLE.test(message(err))) chosen.set(client, 'eval');
            loaded = false;
          }
        }),
      );
      if (loaded) chosen.set(client, 'fcall');
      return loaded;
    })().finally(() => loading.delete(client));
    loading.set(client, pending);
  }
  return pending;
}

async function evalsha(client: RedisClient, s: Script, keys: ScriptKeys, args: ScriptArgs): Promise<Reply> {
  try {
    return await send(client, 'EVALSHA', s.sha, keys, argvNow(args));
  } catch (err) {
    if (!message(err).startsWith('NOSCRIPT')) throw err;
    return await send(client, 'EVAL', s.source, keys, argvNow(args));
  }
}

/**
 * Run `script` with `keys` and `args`: FCALL of its function where the server has functions (the
 * library loaded and the call sent again once when the server answers that it lacks it), else
 * EVALSHA, then EVAL when the server answers NOSCRIPT. Named script errors (`DELAYQ_...`) are
 * turned into their error classes.
 */
export async function runScript(
  client: RedisClient,
  s: Script,
  keys: ScriptKeys,
  args: ScriptArgs,
): Promise<Reply> {
  if (!(client instanceof Cluster)) return runScriptOnce(client, s, keys, args);
  const started = performance.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await runScriptOnce(client, s, keys, args);
    } catch (err) {
      if (!slotInMotion(err) || performance.now() - started > SLOT_MOTION_BUDGET_MS) throw err;
      await new Promise((resolve) => setTimeout(resolve, slotMotionPause(attempt)));
    }
  }
}

// Replies that mean the script did not run where it was sent: the slot is moving (ASK, and
// TRYAGAIN while its keys are split between two masters: a multi-key script is refused on both
// until every key is on one), its owner changed (MOVED) or the cluster is down a moment. ioredis
// follows these itself, but within maxRedirections (64 x 250 ms by default here, fewer when an ASK
// and a TRYAGAIN alternate), which a reshard of a big slot or a slow MIGRATE outlasts; then it
// gives up with "Too many Cluster redirections. Last error: <the reply>".
const SLOT_IN_MOTION =
  /^(?:Too many Cluster redirections\. Last error: (?:ReplyError: )?)?(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/;
/** How long a script refused by a slot in motion is sent again, in all. */
const SLOT_MOTION_BUDGET_MS = 60_000;

function slotInMotion(err: unknown): boolean {
  return SLOT_IN_MOTION.test(message(err));
}

/** The pause before resend `attempt`: 50 ms doubling to 1 s, so a long move costs ~1 call a second. */
function slotMotionPause(attempt: number): number {
  return Math.min(1_000, 50 * 2 ** Math.min(attempt - 1, 5));
}

async function runScriptOnce(
  client: RedisClient,
  s: Script,
  keys: ScriptKeys,
  args: ScriptArgs,
): Promise<Reply> {
  try {
    const fn = useFunctions(client) ? functionLibrary().functions.get(s.name) : undefined;
    if (fn === undefined) return await evalsha(client, s, keys, args);
    const fcall = (): Promise<Reply> => send(client, 'FCALL', fn, keys, argvNow(args));
    try {
      const reply = await fcall();
      if (!chosen.has(client)) chosen.set(client, 'fcall');
      return reply;
    } catch (err) {
      if (NO_FUNCTIONS.test(message(err))) chosen.set(client, 'eval');
      if (NO_FUNCTIONS.test(message(err)) || REFUSED_OOM.test(message(err))) {
        return await evalsha(client, s, keys, args);
      }
      if (!FUNCTION_NOT_FOUND.test(message(err))) throw err;
    }
    // Nothing ran: the server lacks the library (first use, restart without persistence,
    // FUNCTION FLUSH, failover to a node that never had it). Load it and send once more; if the
    // library still cannot be found there, this call goes by EVALSHA.
    if (await loadLibrary(client)) {
      try {
        return await fcall();
      } catch (err) {
        if (!FUNCTION_NOT_FOUND.test(message(err)) && !REFUSED_OOM.test(message(err))) throw err;
      }
    }
    return await evalsha(client, s, keys, args);
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
  scriptKeys: ScriptKeys,
  args: ScriptArgs,
  wait: ReplicaWait,
): Promise<ReplicatedReply> {
  const keys = keyList(scriptKeys);
  let bySource = false;
  // FCALL once this client runs functions (its first script call decided it), else EVALSHA.
  let fn =
    useFunctions(client) && chosen.get(client) === 'fcall'
      ? functionLibrary().functions.get(s.name)
      : undefined;
  let reloaded = false;
  const started = performance.now();
  for (let attempt = 1; ; attempt++) {
    const pipeline = client.pipeline();
    // A pipeline builds its commands through ioredis: runs go as their values.
    const argv = plainArgs(argvNow(args));
    if (fn !== undefined) pipeline.callBuffer('FCALL', fn, keys.length, ...keys, ...argv);
    else if (bySource) pipeline.callBuffer('EVAL', s.source, keys.length, ...keys, ...argv);
    else pipeline.callBuffer('EVALSHA', s.sha, keys.length, ...keys, ...argv);
    pipeline.call('WAIT', wait.replicas, wait.timeoutMs);
    const results = (await pipeline.exec()) ?? [];
    const [scriptError, reply] = results[0] ?? [new Error('no reply to the script'), null];
    const [waitError, count] = results[1] ?? [new Error('no reply to WAIT'), null];
    if (scriptError) {
      if (fn !== undefined && FUNCTION_NOT_FOUND.test(scriptError.message)) {
        // As in runScript: load once, then send again; EVALSHA if that did not bring it.
        if (reloaded || !(await loadLibrary(client))) fn = undefined;
        reloaded = true;
        continue;
      }
      if (fn !== undefined && REFUSED_OOM.test(scriptError.message)) {
        fn = undefined;
        continue;
      }
      if (!bySource && scriptError.message.startsWith('NOSCRIPT')) {
        bySource = true;
        continue;
      }
      if (NOT_RUN.test(scriptError.message) && performance.now() - started < SLOT_MOTION_BUDGET_MS) {
        if (client instanceof Cluster)
          await new Promise<void>((resolve) => client.refreshSlotsCache(() => resolve()));
        await new Promise((resolve) => setTimeout(resolve, slotMotionPause(attempt)));
        continue;
      }
      throw mapScriptError(scriptError, s.name);
    }
    return { reply: reply as Reply, replicated: waitError ? 0 : Number(count), waitError: waitError ?? null };
  }
}
