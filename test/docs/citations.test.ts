/**
 * Citations of the repository's documents cannot dangle: every "docs/<file>.md" named in src/,
 * test/, bench/, scripts/, examples/ or docs/ (its history aside) is a file, every "§n" after it a numbered section of that
 * file, and every "docs/DESIGN.md invariant n" one of its numbered invariants. Documents outside
 * the repository (the former "DESIGN invariant n", "STYLE rule n", "HOT-PATH §n") are not cited.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, invariantNumbers, lineOf, read, sectionNumbers, textFiles } from './doc-index.js';

const FOLDERS = ['src', 'test', 'bench', 'scripts', 'examples', 'docs'];

/** The files checked: docs/history/ is left as it was written, naming documents since replaced. */
const checked = (): string[] => textFiles(...FOLDERS).filter((p) => !p.startsWith('docs/history/'));

/** "docs/<name>.md", then any run of "§n" separated by commas, slashes, "and", spaces or comment marks. */
const CITATION = /\bdocs\/([\w./-]+?\.md)\b((?:(?:[\s,/*#-]|and|--)*§\d+(?:\.\d+)*)*)/g;
const INVARIANT = /\bdocs\/DESIGN\.md invariants? (\d+)((?:(?:,| and| or) \d+)*)/g;
const OUTSIDE = /(\S*)\b(DESIGN invariant|DESIGN §|STYLE|HOT-PATH)\S*/g;

interface Found {
  where: string;
  text: string;
}

function citations(): { files: Found[]; sections: (Found & { doc: string; section: string })[] } {
  const files: Found[] = [];
  const sections: (Found & { doc: string; section: string })[] = [];
  for (const path of checked()) {
    const text = read(path);
    for (const m of text.matchAll(CITATION)) {
      const where = `${path}:${lineOf(text, m.index)}`;
      const doc = `docs/${m[1]!}`;
      files.push({ where, text: doc });
      for (const s of m[2]!.matchAll(/§(\d+(?:\.\d+)*)/g))
        sections.push({ where, text: `${doc} §${s[1]!}`, doc, section: s[1]! });
    }
  }
  return { files, sections };
}

describe('citations of docs/ in code, tests, benchmarks and the docs', () => {
  const found = citations();

  it('finds the citations it checks (the pattern still matches how comments cite)', () => {
    // Without this, a pattern that stopped matching would pass every check below.
    expect(found.files.length).toBeGreaterThan(50);
    expect(found.sections.length).toBeGreaterThan(50);
    expect(found.sections.map((s) => s.text)).toContain('docs/ARCHITECTURE.md §3.2');
  });

  it('names only files that exist', () => {
    const missing = found.files.filter((c) => !existsSync(join(ROOT, c.text)));
    expect(missing.map((c) => `${c.where}: ${c.text}`)).toEqual([]);
  });

  it('names only sections that exist in the file it names', () => {
    const cache = new Map<string, Set<string>>();
    const missing = found.sections.filter((c) => {
      if (!existsSync(join(ROOT, c.doc))) return false; // reported by the test above
      if (!cache.has(c.doc)) cache.set(c.doc, sectionNumbers(read(c.doc)));
      return !cache.get(c.doc)!.has(c.section);
    });
    expect(missing.map((c) => `${c.where}: ${c.text}`)).toEqual([]);
  });

  it('names only invariants that docs/DESIGN.md numbers', () => {
    const known = invariantNumbers(read('docs/DESIGN.md'));
    expect([...known].sort((a, b) => Number(a) - Number(b))).toEqual(
      Array.from({ length: 11 }, (_, i) => String(i + 1)),
    );
    const bad: string[] = [];
    let cited = 0;
    for (const path of checked()) {
      const text = read(path);
      for (const m of text.matchAll(INVARIANT)) {
        const numbers = [m[1]!, ...[...m[2]!.matchAll(/\d+/g)].map((n) => n[0])];
        for (const n of numbers) {
          cited++;
          if (!known.has(n)) bad.push(`${path}:${lineOf(text, m.index)}: invariant ${n}`);
        }
      }
    }
    expect(cited).toBeGreaterThan(10);
    expect(bad).toEqual([]);
  });

  it('cites no document outside the repository (DESIGN invariant n, STYLE, HOT-PATH)', () => {
    const outside: string[] = [];
    for (const path of checked()) {
      if (path === 'test/docs/citations.test.ts') continue; // names them to look for them
      const text = read(path);
      for (const m of text.matchAll(OUTSIDE)) {
        const token = m[0].replace(/[),.;:]+$/, '');
        if (token.startsWith('docs/') && existsSync(join(ROOT, token))) continue;
        outside.push(`${path}:${lineOf(text, m.index)}: ${m[0]}`);
      }
    }
    expect(outside).toEqual([]);
  });
});

describe('the helpers the checks rely on', () => {
  it('reads section numbers from headings only', () => {
    const numbers = sectionNumbers('# T\n## 3. Keys\n### 3.2 The record\n1. a list item\n#### 10 x\n');
    expect([...numbers]).toEqual(['3', '3.2', '10']);
  });

  it('reads the invariants of section 2 only', () => {
    const design =
      '## 1. API\n1. **Not one.** x\n## 2. Invariants\n1. **One.** a\n2. **Two.** b\n## 3. Other\n3. **No.**\n';
    expect([...invariantNumbers(design)]).toEqual(['1', '2']);
  });

  it('finds a citation whose section number wraps onto the next comment line', () => {
    const text = '-- migrate-read: read (docs/ARCHITECTURE.md\n-- §10): every id, and §3.1, §4.4/§5.3.';
    const m = [...text.matchAll(CITATION)];
    expect(m.map((x) => [...x[2]!.matchAll(/§([\d.]*\d)/g)].map((s) => s[1]))).toEqual([['10']]);
    const list = [...'x (docs/ARCHITECTURE.md §3.1, §4.4/§5.3 and §6).'.matchAll(CITATION)];
    expect([...list[0]![2]!.matchAll(/§([\d.]*\d)/g)].map((s) => s[1])).toEqual(['3.1', '4.4', '5.3', '6']);
  });
});
