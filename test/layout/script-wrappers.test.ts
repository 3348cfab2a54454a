/**
 * One convention for script wrappers (docs/ARCHITECTURE.md §4, CONTRIBUTING.md): every Lua script
 * `src/scripts/<name>.lua` (includes/ aside) has exactly one wrapper, `src/operations/<name>.ts`,
 * which builds its KEYS (from src/redis/keys.ts) and ARGV, runs it and parses its reply; no other
 * module of src/ runs that script. src/operations/ holds those wrappers and a short, named list of
 * helpers they share, nothing else. Checked on the sources, so a wrapper cannot drift back into
 * queue/, schedule/ or migrate/, nor a second module start calling a script by name.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');
const OPERATIONS = 'src/operations';

/** Modules of src/operations that wrap no script of their own, and why each is there. */
const HELPERS: Record<string, string> = {
  'ack-args.ts': "claim.lua's ack ARGV written straight into the command (the claim wrapper's encoder)",
  'ack.ts': 'acks alone: a claim of limit 0 through the claim wrapper (claim.lua carries the acks)',
  'add-pack.ts': "add.lua's ARGV packed in runs (the add wrapper's encoder)",
  'config-record.ts': 'the config record: its types, constants and the HMGET of its live fields',
  'group-totals.ts': "a partition's group totals, read straight from their keys for the metrics",
  'migrate-keys.ts': 'the partition keys migrate-read, -write and -seal share',
  'oldest-dead.ts': 'the oldest dead ids, read page by page to purge the dead set (a ZRANGE)',
  'raw-job.ts': 'the undecoded job that get, list and group-jobs reply with',
  'reply.ts': 'typed readers of a script reply',
  'waiting-keys.ts': 'the waiting KEYS every script that places a job takes',
  'wheel.ts': "the layouts, the wheel's bucket KEYS and the call that retries DELAYQ_WRONG_BUCKET",
};

const scripts = readdirSync(join(SRC, 'scripts'))
  .filter((f) => f.endsWith('.lua'))
  .map((f) => f.slice(0, -'.lua'.length))
  .sort();

/** Every .ts file of src/ that ships (tests aside), relative to the repository. */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [relative(ROOT, path)] : [];
  });
}

const files = sources();

/**
 * The scripts a source file runs by name: `script('<name>')` (runScript, runScriptAndWait) and
 * `runWheelAware(<client>, '<name>', ...)`, the two ways a script is called by its name.
 */
function scriptsRunBy(text: string): string[] {
  const byScript = [...text.matchAll(/\bscript\(\s*'([\w-]+)'\s*\)/g)].map((m) => m[1]!);
  const byWheel = [...text.matchAll(/\brunWheelAware\(\s*[\w.]+\s*,\s*'([\w-]+)'/g)].map((m) => m[1]!);
  return [...byScript, ...byWheel];
}

const runs = new Map<string, string[]>();
for (const file of files) {
  for (const name of scriptsRunBy(readFileSync(join(ROOT, file), 'utf8'))) {
    const by = runs.get(name) ?? [];
    if (!by.includes(file)) by.push(file);
    runs.set(name, by);
  }
}

describe('script wrappers', () => {
  it('finds the scripts and the modules that run them', () => {
    expect(scripts).toContain('claim');
    expect(scripts.length).toBeGreaterThan(30);
    expect(runs.get('claim')).toEqual([`${OPERATIONS}/claim.ts`]);
  });

  it('gives every script exactly one wrapper, src/operations/<name>.ts, and no other module runs it', () => {
    const wrong = scripts
      .map((name) => ({ name, by: runs.get(name) ?? [] }))
      .filter(({ name, by }) => by.length !== 1 || by[0] !== `${OPERATIONS}/${name}.ts`);
    expect(wrong).toEqual([]);
  });

  it('runs no script by a name that has no .lua file', () => {
    expect([...runs.keys()].filter((name) => !scripts.includes(name))).toEqual([]);
  });

  it('holds in src/operations only wrappers and the named helpers', () => {
    const modules = readdirSync(join(ROOT, OPERATIONS)).filter(
      (f) => f.endsWith('.ts') && !f.endsWith('.test.ts'),
    );
    const stray = modules.filter((f) => !scripts.includes(f.slice(0, -'.ts'.length)) && !(f in HELPERS));
    expect(stray).toEqual([]);
    // A helper that became a script's name, or was removed, leaves the list.
    expect(
      Object.keys(HELPERS).filter((f) => !modules.includes(f) || scripts.includes(f.slice(0, -3))),
    ).toEqual([]);
  });

  it('imports the script runner only in src/operations (and src/redis, where it lives)', () => {
    const runner =
      /import\s*\{[^}]*\b(runScript|runScriptAndWait|runWheelAware|script)\b[^}]*\}\s*from\s*'[^']*\/(redis\/scripts|operations\/wheel)\.js'/;
    const outside = files.filter(
      (f) =>
        !f.startsWith(`${OPERATIONS}/`) &&
        !f.startsWith('src/redis/') &&
        runner.test(readFileSync(join(ROOT, f), 'utf8')),
    );
    expect(outside).toEqual([]);
  });
});
