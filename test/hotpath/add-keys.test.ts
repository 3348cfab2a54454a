/**
 * A script's KEYS order is written where three readers need it: its header (docs/PROTOCOL.md's
 * tables are generated from it, for clients in other languages), the list the Lua names its keys
 * by, and the TypeScript wrapper that passes them. Each header line `KEYS[i] <letters> ...` names
 * the key by the letters its name ends in (src/redis/keys.ts builds every key as
 * `dq:{<queue>}:<letters>`), so the three can be held to one order without a table of names.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeScript } from '../../scripts/protocol-tables.js';
import { addKeys } from '../../src/operations/add.js';
import { queueKeys } from '../../src/redis/keys.js';

const INCLUDES = new URL('../../src/scripts/includes/', import.meta.url).pathname;

/** The letters of each numbered KEYS[i] row of `script`'s header, KEYS[1] first. */
function headerKeys(script: string): string[] {
  const rows = describeScript(script).rows.filter(([name]) => /^KEYS\[\d+\]$/.test(name));
  rows.forEach(([name], i) => expect(name, `${script}.lua header row ${i + 1}`).toBe(`KEYS[${i + 1}]`));
  return rows.map(([, what]) => /^(\w+)\s/.exec(what)?.[1] ?? `(no letters: ${what})`);
}

/** The Lua list `local <name> = { 'a', 'b', ... }` in include `file`. */
function luaKeyList(file: string, name: string): string[] {
  const text = readFileSync(`${INCLUDES}${file}`, 'utf8');
  const list = new RegExp(`^local ${name} = \\{([^}]*)\\}`, 'm').exec(text)?.[1];
  if (list === undefined) throw new Error(`${file} has no 'local ${name} = { ... }'`);
  return [...list.matchAll(/'(\w+)'/g)].map((m) => m[1]!);
}

/** What a key's name ends in after its hash tag. */
function letters(key: string): string {
  return key.slice(key.indexOf('}:') + 2);
}

describe('add.lua KEYS order: one for the header, the Lua and the wrapper', () => {
  it('add.lua: header, ADD_KEYS (add-call.lua) and addKeys() agree', () => {
    const header = headerKeys('add');
    expect(header).toHaveLength(17);
    expect(luaKeyList('add-call.lua', 'ADD_KEYS')).toEqual(header);
    expect(addKeys(queueKeys('q')).map(letters)).toEqual(header);
  });
});
