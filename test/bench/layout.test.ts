/**
 * bench/ keeps its layout (bench/README.md): the .ts files at its top level are entry points, each
 * run by an npm script and listed in the README, and imported by nothing; every npm script that
 * names a bench file names one that exists; every child process in bench/processes/ is spawned by
 * something. So a module cannot drift back among the entry points, nor a script point at a file
 * that moved.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const scripts = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
).scripts;
const readme = readFileSync(join(ROOT, 'bench/README.md'), 'utf8');

/** Every .ts file under bench/ (results and prototype data aside), relative to bench/. */
function benchSources(dir = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, 'bench', dir), { withFileTypes: true })) {
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (entry.name !== 'results') out.push(...benchSources(path));
    } else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

const sources = benchSources();
const entryPoints = sources.filter((p) => !p.includes('/'));

describe('bench/ layout', () => {
  it('has entry points at its top level, and finds them', () => {
    expect(entryPoints).toContain('run.ts');
    expect(entryPoints.length).toBeGreaterThan(10);
  });

  it('runs every top-level entry point from an npm script, and lists it in bench/README.md', () => {
    const commands = Object.values(scripts).join('\n');
    expect(entryPoints.filter((f) => !commands.includes(`bench/${f}`))).toEqual([]);
    expect(entryPoints.filter((f) => !readme.includes(`\`${f}`))).toEqual([]);
  });

  it('points every npm script that names a bench file at a file that exists', () => {
    const named = Object.values(scripts).flatMap((c) =>
      [...c.matchAll(/\bbench\/[\w./-]+\.ts\b/g)].map((m) => m[0]),
    );
    expect(named.length).toBeGreaterThan(15);
    expect(named.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
  });

  it('imports no top-level entry point from anywhere in bench/ or test/', () => {
    const importers: string[] = [];
    for (const file of sources) {
      const text = readFileSync(join(ROOT, 'bench', file), 'utf8');
      const depth = file.split('/').length - 1;
      const up = depth === 0 ? './' : '../'.repeat(depth);
      for (const entry of entryPoints) {
        const spec = `${up}${entry.replace(/\.ts$/, '.js')}`;
        if (text.includes(`from '${spec}'`)) importers.push(`${file} imports ${entry}`);
      }
    }
    expect(importers).toEqual([]);
  });

  it('spawns every child process in bench/processes/ from somewhere in bench/', () => {
    const children = sources.filter((p) => p.startsWith('processes/'));
    expect(children.length).toBeGreaterThanOrEqual(4);
    const others = sources
      .filter((p) => !p.startsWith('processes/'))
      .map((p) => readFileSync(join(ROOT, 'bench', p), 'utf8'))
      .join('\n');
    expect(children.filter((c) => !others.includes(`processes/${c.slice('processes/'.length)}`))).toEqual([]);
  });
});
