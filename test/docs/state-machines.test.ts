/**
 * docs/STATE-MACHINES.md names only what exists: every script it names is a file in src/scripts/
 * (or its includes/), every key `dq:{q}:<role>` is one that src/redis/keys.ts builds for layout 2
 * (not a deprecated layout-1 field), each row of its key table pairs a key with the QueueKeys field
 * that builds it, and every path it names is in the repository. So the page cannot go on naming
 * scripts and keys that are gone, as it did for layout 1's ack.lua, `active` and `done`. Likewise
 * docs/ARCHITECTURE.md: every .lua it names exists, and its script table (§4.11) lists every script.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { queueKeys, type QueueKeys } from '../../src/redis/keys.js';
import { ROOT, read } from './doc-index.js';

const DOC = 'docs/STATE-MACHINES.md';
const doc = read(DOC);
const keys = queueKeys('q');

/** QueueKeys fields marked @deprecated in keys.ts: layout-1 names no document may present as current. */
function deprecatedFields(): Set<string> {
  const source = read('src/redis/keys.ts');
  return new Set([...source.matchAll(/@deprecated[^\n]*\*\/\s*readonly (\w+)/g)].map((m) => m[1]!));
}

const deprecated = deprecatedFields();
const current = Object.entries(keys).filter(([field]) => !deprecated.has(field));
/** Key name -> field, for the fields of layout 2. */
const fieldOfKey = new Map(current.map(([field, key]) => [key, field]));

/** `dq:{q}:<role>` with any `:<placeholder>` tail (a wheel bucket's `wb:<start>`) taken off. */
function keyName(token: string): string {
  return token.replace(/:<[^>]*>$/, '');
}

describe(`${DOC} names only scripts, keys and files that exist`, () => {
  it('names scripts that are files in src/scripts/ or src/scripts/includes/', () => {
    const named = new Set([...doc.matchAll(/\b((?:includes\/)?[\w-]+\.lua)\b/g)].map((m) => m[1]!));
    expect(named.size).toBeGreaterThan(10);
    const missing = [...named].filter(
      (s) => !existsSync(join(ROOT, 'src/scripts', s)) && !existsSync(join(ROOT, 'src/scripts/includes', s)),
    );
    expect(missing).toEqual([]);
    // The scripts every transition of a job goes through are there by name.
    for (const s of ['add.lua', 'claim.lua', 'fail.lua', 'release.lua', 'reap.lua', 'cancel.lua', 'trim.lua'])
      expect(named).toContain(s);
  });

  it('names keys that src/redis/keys.ts builds for layout 2', () => {
    const named = new Set([...doc.matchAll(/dq:\{q\}:\w+(?::\w+)*(?::<[^>]*>)?/g)].map((m) => keyName(m[0])));
    expect(named.size).toBeGreaterThan(10);
    expect([...named].filter((k) => !fieldOfKey.has(k))).toEqual([]);
    // A key named by its role alone ("the `active` ZSET") is a key too.
    const roles = [...doc.matchAll(/`(\w+)` (?:ZSET|HASH|LIST|STRING|STREAM)\b/g)].map((m) => m[1]!);
    expect(roles.filter((r) => !fieldOfKey.has(`dq:{q}:${r}`))).toEqual([]);
  });

  it('pairs each key of its key table with the QueueKeys field that builds it', () => {
    const rows = doc
      .split('\n')
      .filter((line) => line.startsWith('|') && line.includes('dq:{q}:'))
      .map((line) => line.split('|').map((cell) => cell.trim()));
    expect(rows.length).toBeGreaterThanOrEqual(8);
    for (const cells of rows) {
      const keyCell = cells[2]!;
      const fieldCell = cells[3]!;
      const named = [...keyCell.matchAll(/dq:\{q\}:\w+(?::\w+)*(?::<[^>]*>)?/g)].map((m) => keyName(m[0]));
      const fields = [...fieldCell.matchAll(/`(\w+)`/g)].map((m) => m[1]!);
      expect({ row: keyCell, fields }).toEqual({ row: keyCell, fields: named.map((k) => fieldOfKey.get(k)) });
      for (const field of fields) expect(deprecated.has(field), field).toBe(false);
      for (const [i, field] of fields.entries()) expect(keys[field as keyof QueueKeys], field).toBe(named[i]);
    }
  });

  it('names paths that exist in the repository', () => {
    const named = new Set(
      [...doc.matchAll(/\b(?:src|test|docs|bench|scripts|examples)\/[\w./-]*[\w/]/g)].map((m) => m[0]),
    );
    expect(named.size).toBeGreaterThan(3);
    expect([...named].filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
  });

  it('would catch the layout-1 names it used to carry', () => {
    // The deprecated fields are the layout-1 keys; if keys.ts drops them, the check above already
    // refuses them as unknown. Either way none of them may be named as a key here.
    for (const legacy of ['active', 'done', 'leases', 'schedule', 'jobs', 'meta', 'token']) {
      const key = `dq:{q}:${legacy}`;
      expect(fieldOfKey.has(key), key).toBe(false);
      expect(doc.includes(key), key).toBe(false);
    }
  });
});

describe('docs/ARCHITECTURE.md names only scripts that exist', () => {
  const architecture = read('docs/ARCHITECTURE.md');
  const isScript = (name: string): boolean =>
    existsSync(join(ROOT, 'src/scripts', `${name}.lua`)) ||
    existsSync(join(ROOT, 'src/scripts/includes', `${name}.lua`));

  it('names .lua files that are in src/scripts/ (dist/ paths and globs aside)', () => {
    const named = [...architecture.matchAll(/(?<![\w/*<>-])((?:includes\/)?[\w-]+)\.lua\b/g)].map((m) =>
      m[1]!.replace(/^includes\//, ''),
    );
    expect(named.length).toBeGreaterThan(20);
    expect([...new Set(named)].filter((s) => !isScript(s))).toEqual([]);
  });

  it('lists in its script table (§4.11) only scripts that exist, and every script there is', () => {
    const start = architecture.indexOf('### 4.11 ');
    const table = architecture.slice(start, architecture.indexOf('### 4.12 ', start));
    const listed = new Set<string>();
    for (const line of table.split('\n').filter((l) => l.startsWith('| `'))) {
      const cell = line.split('|')[1]!;
      // "`migrate-begin`, `-read`" names migrate-read: a leading dash continues the first name's stem.
      let stem = '';
      for (const m of cell.matchAll(/`([\w-]+)`/g)) {
        const name = m[1]!;
        if (name.startsWith('-')) listed.add(`${stem}${name}`);
        else {
          listed.add(name);
          stem = name.split('-')[0]!;
        }
      }
    }
    expect([...listed].filter((s) => !isScript(s))).toEqual([]);
    const scripts = readdirSync(join(ROOT, 'src/scripts'))
      .filter((f) => f.endsWith('.lua'))
      .map((f) => f.slice(0, -'.lua'.length));
    expect(scripts.filter((s) => !listed.has(s))).toEqual([]);
  });
});
