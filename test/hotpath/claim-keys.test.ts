/**
 * claim.lua's KEYS order is written in three places that nothing else ties together: the script's
 * header (the contract, from which docs/PROTOCOL.md's table is generated), the K table of
 * src/scripts/includes/claim-context.lua (what the script reads) and claimKeys() in
 * src/operations/claim.ts (what the library sends). A key moved in one of them would make the
 * claim read one key as another; this test makes the three agree, name by name.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { claimKeys } from '../../src/operations/claim.js';
import { queueKeys } from '../../src/redis/keys.js';

const SCRIPTS = fileURLToPath(new URL('../../src/scripts/', import.meta.url));

/** The key names of `-- KEYS[i] <name> ...` header lines, by index (1-based, in order). */
function headerKeyNames(source: string): string[] {
  const names: string[] = [];
  for (const line of source.split('\n')) {
    if (!line.startsWith('--')) break;
    const m = /^-- KEYS\[(\d+)\]\s+(\w+)\s/.exec(line);
    if (!m) continue;
    expect(Number(m[1]), `header line "${line}" is out of order`).toBe(names.length + 1);
    names.push(m[2]!);
  }
  return names;
}

/** The `name = KEYS[i]` entries of claim_context's K table, by index. */
function contextKeyNames(source: string): string[] {
  const table = /local K = \{([^}]*)\}/.exec(source)?.[1];
  if (table === undefined) throw new Error('claim-context.lua has no `local K = { ... }` table');
  const names: string[] = [];
  for (const m of table.matchAll(/(\w+) = KEYS\[(\d+)\]/g)) {
    const index = Number(m[2]);
    // events is the emit() name of ev (events.lua): the same key twice, by design.
    if (m[1] === 'events') continue;
    expect(names[index - 1], `KEYS[${index}] is in the K table twice`).toBeUndefined();
    names[index - 1] = m[1]!;
  }
  return names;
}

describe("claim.lua's KEYS order", () => {
  const header = headerKeyNames(readFileSync(`${SCRIPTS}claim.lua`, 'utf8'));
  const context = readFileSync(`${SCRIPTS}includes/claim-context.lua`, 'utf8');

  it('is read from the header: 22 keys, each named once', () => {
    expect(header).toHaveLength(22);
    expect(new Set(header).size).toBe(header.length);
  });

  it('is the order of the K table the script reads', () => {
    expect(contextKeyNames(context)).toStrictEqual(header);
    expect(context).toMatch(/events = KEYS\[(\d+)\]/);
    expect(Number(/events = KEYS\[(\d+)\]/.exec(context)![1])).toBe(header.indexOf('ev') + 1);
  });

  it('is the order claimKeys() sends, each key named by its suffix', () => {
    const keys = claimKeys(queueKeys('q'));
    expect(keys.map((k) => /^dq:\{q\}:(\w+)$/.exec(k)?.[1])).toStrictEqual(header);
  });

  it('catches a K table with two keys swapped (the check can fail)', () => {
    const swapped = context.replace('s = KEYS[1], p = KEYS[2]', 's = KEYS[2], p = KEYS[1]');
    expect(swapped).not.toBe(context);
    expect(contextKeyNames(swapped)).not.toStrictEqual(header);
  });
});
