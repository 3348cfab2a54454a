/**
 * Builds the delayq Redis function library (Redis >= 7.0) from the same .lua files EVAL runs:
 * each script's body becomes one registered function, and the includes are defined once at
 * library level. An EVAL script re-creates every helper its includes define at each call; a
 * library runs its top level once, at FUNCTION LOAD (docs/ARCHITECTURE.md §4.12).
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The library: its FUNCTION LOAD source, its name, and the function each script runs as. */
export interface FunctionLibrary {
  /** `delayq_<first 12 hex of the source's SHA1>`: two delayq versions on one server coexist. */
  readonly name: string;
  readonly source: string;
  /** Script name (file name without `.lua`) -> registered function name. */
  readonly functions: ReadonlyMap<string, string>;
}

/**
 * Scripts that only read: registered with the `no-writes` flag, so they also run on a read-only
 * replica. Each is checked against its source when the library is built.
 */
const READ_ONLY = new Set([
  'counts',
  'get',
  'group-jobs',
  'groups-list',
  'list',
  'migrate-read',
  'schedule-read',
]);

// Commands a no-writes function must not call (a write inside one fails at run time).
const WRITE_CALL =
  /redis\.p?call\(\s*'(SET|DEL|UNLINK|HSET|HDEL|HINCRBY|HSETNX|ZADD|ZREM|ZPOPMIN|ZINCRBY|ZREMRANGEBYSCORE|ZREMRANGEBYRANK|RPUSH|LPUSH|LPOP|RPOP|LREM|LTRIM|LMOVE|RPOPLPUSH|XADD|XTRIM|PUBLISH|INCR|INCRBY|EXPIRE|PEXPIRE|PEXPIREAT|RENAME|SADD|SREM|GETDEL)'/i;

const REPLICATE_COMMANDS = /^if redis\.replicate_commands then redis\.replicate_commands\(\) end$/m;
const INCLUDE_LINE = /^--!include (\S+)\s*$/;

interface Parsed {
  /** Include files, in order, as `includes/<name>`. */
  readonly includes: string[];
  /** The text without its include lines. */
  readonly body: string;
}

// A file's include lines must come before any code, so the library can define them ahead of it
// with the same meaning; a file that breaks this rule cannot be put in the library.
function parse(dir: string, file: string): Parsed {
  const includes: string[] = [];
  const body: string[] = [];
  let code = false;
  for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
    const include = INCLUDE_LINE.exec(line);
    if (include) {
      if (code) throw new Error(`${file}: --!include ${include[1]} follows code; includes must come first`);
      includes.push(join('includes', include[1] ?? ''));
      continue;
    }
    if (!/^\s*(--.*)?$/.test(line)) code = true;
    body.push(line);
  }
  return { includes, body: body.join('\n') };
}

// Every include a file needs, its own includes before it, each once.
function flatten(dir: string, file: string, seen: string[] = []): string[] {
  const out: string[] = [];
  for (const inc of parse(dir, file).includes) {
    if (seen.includes(inc)) throw new Error(`Lua include cycle: ${[...seen, inc].join(' -> ')}`);
    for (const f of [...flatten(dir, inc, [...seen, inc]), inc]) if (!out.includes(f)) out.push(f);
  }
  return out;
}

// Top-level names an include defines.
function definedNames(text: string): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(/^local (?:function )?([A-Za-z_][\w, ]*?)\s*(?:=|\(|$)/gm)) {
    names.push(...(m[1] ?? '').split(',').map((n) => n.trim()));
  }
  return names;
}

// All includes in one order where each comes after those whose names it uses, so every reference
// binds as in the expanded scripts; otherwise in the order first met.
function dependencyOrder(files: string[], text: (file: string) => string): string[] {
  const owner = new Map<string, string>();
  for (const f of files) {
    for (const name of definedNames(text(f))) {
      const other = owner.get(name);
      if (other !== undefined) throw new Error(`${name} is defined by both ${other} and ${f}`);
      owner.set(name, f);
    }
  }
  const needs = new Map(
    files.map((f) => {
      const words = new Set(text(f).match(/(?<![\w.:])[A-Za-z_]\w*/g) ?? []);
      return [f, [...owner].filter(([name, o]) => o !== f && words.has(name)).map(([, o]) => o)];
    }),
  );
  const done: string[] = [];
  while (done.length < files.length) {
    const next = files.find((f) => !done.includes(f) && (needs.get(f) ?? []).every((d) => done.includes(d)));
    if (next === undefined) throw new Error('Lua includes depend on each other in a cycle');
    done.push(next);
  }
  return done;
}

/**
 * Top-level locals of the includes that are reassigned anywhere: per-call state in an EVAL script
 * (e.g. groups.lua's turn counter, read once per call). At library level they would outlive a call,
 * so every function sets them back to their first value on entry. A top-level table that is
 * written to cannot be reset this way and is refused, but for a memo (a name ending in `_MEMO`):
 * it holds a pure function's answers, the same whichever call filled it, so it may outlive a call
 * (prelude.lua's SETTING_MEMO).
 */
function perCallState(includes: string[], all: string): string[] {
  const resets: string[] = [];
  const lines = all.split('\n');
  for (const text of includes) {
    for (const m of text.matchAll(/^local ([A-Za-z_][\w, ]*?)\s*=\s*(.+)$/gm)) {
      const names = (m[1] ?? '').split(',').map((n) => n.trim());
      const value = (m[2] ?? '').trim();
      for (const name of names) {
        const assigned = new RegExp(`(^|[^\\w.])${name}\\s*(,\\s*[\\w.]+\\s*)*=[^=]`);
        const indexed = new RegExp(`(^|[^\\w.])${name}(\\[[^\\]]*\\]|\\.\\w+)\\s*=[^=]`);
        const writes = lines.filter((line) => !/^\s*local\b/.test(line));
        const memo = name.endsWith('_MEMO');
        if (!memo && value.startsWith('{') && writes.some((l) => assigned.test(l) || indexed.test(l))) {
          throw new Error(`include table ${name} is written to; it cannot live at library level`);
        }
        if (!writes.some((l) => assigned.test(l))) continue;
        if (names.length > 1) throw new Error(`per-call state ${name} must be declared alone`);
        resets.push(`${name} = ${value}`);
      }
    }
  }
  return resets;
}

// Each top-level helper function of the includes and its text.
function helperBodies(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/^local function (\w+)[^]*?^end$/gm)) out.set(m[1] ?? '', m[0]);
  return out;
}

// The write command `text` may run, directly or through the helpers it calls; null when none.
function writesThrough(text: string, helpers: Map<string, string>, seen = new Set<string>()): string | null {
  const direct = WRITE_CALL.exec(text);
  if (direct) return direct[1] ?? null;
  for (const [name, body] of helpers) {
    if (seen.has(name) || !new RegExp(`(?<![\\w.:])${name}\\(`).test(text)) continue;
    seen.add(name);
    const write = writesThrough(body, helpers, seen);
    if (write) return `${write} (through ${name})`;
  }
  return null;
}

/** Build the library from the scripts (`<dir>/*.lua`) and their includes (`<dir>/includes/`). */
export function buildLibrary(dir: string): FunctionLibrary {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.lua'))
    .sort();
  const scripts = files.map((file) => ({ file, ...parse(dir, file), order: flatten(dir, file) }));
  const order = dependencyOrder([...new Set(scripts.flatMap((s) => s.order))], (inc) => parse(dir, inc).body);
  // Functions are always effect-replicated, and a library may call nothing of `redis` but
  // register_function and log while it loads: the prelude's replicate_commands line stays out.
  const text = new Map(order.map((inc) => [inc, parse(dir, inc).body.replace(REPLICATE_COMMANDS, '')]));
  // Lua allows 200 locals in one scope: an include only one script uses (claim's and add's steps)
  // is defined in a `do ... end` block around that script's function, so its names are locals of
  // that block, not of the whole library. No shared include can use one: it would then be part of
  // every script that includes the shared one.
  const users = (inc: string): string[] => scripts.filter((s) => s.order.includes(inc)).map((s) => s.file);
  const privateTo = new Map(order.map((inc) => [inc, users(inc).length === 1 ? users(inc)[0] : undefined]));
  const shared = order.filter((inc) => privateTo.get(inc) === undefined);
  const own = (file: string): string[] => order.filter((inc) => privateTo.get(inc) === file);
  const all = [...text.values(), ...scripts.map((s) => s.body)].join('\n');
  const block = (incs: string[]): string[] => incs.map((inc) => text.get(inc) ?? '');
  const sharedResets = perCallState(block(shared), all);
  const helpers = helperBodies(block(order).join('\n'));
  const functions = scripts.map((s) => {
    const name = s.file.slice(0, -'.lua'.length);
    if (READ_ONLY.has(name)) {
      const write = writesThrough(s.body, helpers);
      if (write) throw new Error(`${s.file} is registered no-writes but may call ${write}`);
    }
    return {
      name,
      script: s,
      includes: own(s.file),
      resets: [...sharedResets, ...perCallState(block(own(s.file)), all)],
    };
  });
  // The name is hashed over everything but itself: the function names carry the same hash.
  const draft = (prefix: string): string =>
    [
      `#!lua name=${prefix}`,
      // Scripts and includes read KEYS and ARGV; in a function they are its arguments. No call can
      // interleave with another (FCALL is atomic and cannot nest), so one pair serves all.
      'local KEYS, ARGV',
      ...shared.map((inc) => `-- ${inc}\n${text.get(inc) ?? ''}`),
      ...functions.map(({ name, script: s, includes, resets }) =>
        [
          ...(includes.length > 0
            ? ['do', ...includes.map((inc) => `-- ${inc}\n${text.get(inc) ?? ''}`)]
            : []),
          `-- ${s.file}`,
          'redis.register_function{',
          `  function_name = '${prefix}_${name.replace(/-/g, '_')}',`,
          '  callback = function(keys, args)',
          '  KEYS, ARGV = keys, args',
          ...resets.map((r) => `  ${r}`),
          s.body,
          '  end,',
          READ_ONLY.has(name) ? "  flags = { 'no-writes' }," : '',
          '}',
          ...(includes.length > 0 ? ['end'] : []),
        ].join('\n'),
      ),
    ].join('\n');
  const hash = createHash('sha1').update(draft('delayq')).digest('hex').slice(0, 12);
  return parseLibrary(draft(`delayq_${hash}`));
}

/**
 * The build ships the library as this file beside the scripts (its dist/scripts holds them
 * expanded, without their includes): what delayq loads from the package, and what a client in
 * another language may FUNCTION LOAD itself.
 */
export const LIBRARY_FILE = 'delayq-functions.lua';

/** A library from its FUNCTION LOAD source (as buildLibrary writes it). */
export function parseLibrary(source: string): FunctionLibrary {
  const name = /^#!lua name=(\w+)/.exec(source)?.[1];
  if (name === undefined) throw new Error('not a delayq function library: no #!lua name= line');
  const functions = new Map<string, string>();
  for (const m of source.matchAll(
    /^-- (\S+)\.lua\nredis\.register_function\{\n {2}function_name = '(\w+)'/gm,
  )) {
    functions.set(m[1] ?? '', m[2] ?? '');
  }
  return { name, source, functions };
}
