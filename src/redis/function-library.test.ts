import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildLibrary, parseLibrary } from './function-library.js';

const dir = fileURLToPath(new URL('../scripts/', import.meta.url));

describe('buildLibrary', () => {
  const lib = buildLibrary(dir);

  it('names the library and its functions by the hash of its source', () => {
    expect(lib.name).toMatch(/^delayq_[0-9a-f]{12}$/);
    expect(lib.source.startsWith(`#!lua name=${lib.name}\n`)).toBe(true);
    expect(lib.functions.get('schedule-tick')).toBe(`${lib.name}_schedule_tick`);
    expect(parseLibrary(lib.source)).toEqual(lib);
  });

  it('defines each include once, without the prelude replicate_commands call a library may not make', () => {
    expect(lib.source.match(/^local function now_ms\(\)/gm)).toHaveLength(1);
    expect(lib.source).not.toMatch(/replicate_commands/);
  });

  it('sets the includes per-call state back on entry to every function', () => {
    const entries = lib.source.split('callback = function(keys, args)').slice(1);
    expect(entries).toHaveLength(lib.functions.size);
    for (const entry of entries) {
      const head = entry
        .split('\n')
        .slice(1, 4)
        .map((l) => l.trim());
      // The resets follow the includes' order, which is not the point: that each is there.
      expect(head[0]).toBe('KEYS, ARGV = keys, args');
      expect(head.slice(1).sort()).toEqual(['group_last_turn = nil', 'wheel_left_behind = false']);
    }
  });

  it('keeps a memo table (a name ending in _MEMO) across calls, and refuses any other table a call writes', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'delayq-library-'));
    try {
      mkdirSync(join(scratch, 'includes'));
      const build = (include: string) => {
        writeFileSync(join(scratch, 'includes', 'helper.lua'), include);
        writeFileSync(join(scratch, 'user.lua'), '--!include helper.lua\nreturn look(ARGV[1])\n');
        return buildLibrary(scratch);
      };
      const memo = build(
        'local LOOK_MEMO = { seen = {} }\nlocal function look(t)\n  LOOK_MEMO.seen[t] = true\n  return t\nend\n',
      );
      expect(memo.source).toContain('local LOOK_MEMO = { seen = {} }');
      // Not set back on entry: the memo outlives the call.
      expect(memo.source).not.toMatch(/^\s+LOOK_MEMO = /m);
      expect(() =>
        build('local LOOK = { seen = {} }\nlocal function look(t)\n  LOOK.seen = t\n  return t\nend\n'),
      ).toThrow('include table LOOK is written to; it cannot live at library level');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('flags only the read-only scripts no-writes', () => {
    const flagged = lib.source
      .split('redis.register_function{')
      .slice(1)
      .filter(
        (f) =>
          f.trimEnd().endsWith("flags = { 'no-writes' },\n}") || f.includes("  flags = { 'no-writes' },\n}"),
      )
      .map((f) => (/function_name = '(\w+)'/.exec(f)?.[1] ?? '').slice(lib.name.length + 1));
    expect(flagged.sort()).toEqual([
      'counts',
      'get',
      'group_jobs',
      'groups_list',
      'list',
      'migrate_read',
      'schedule_read',
    ]);
  });
});
