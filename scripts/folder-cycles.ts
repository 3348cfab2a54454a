/**
 * Folder-level import cycles in src/ (`npm run check:cycles` runs it after madge's file-level
 * check). The file graph of `madge --json --extensions ts src` (test files left out) is mapped to
 * folders: a file belongs to its first folder under src/, and a file at the root
 * of src/ to the folder of its own name when there is one (queue.ts to queue/, worker.ts to
 * worker/), else to none. Folders must form layers: any folder that can reach itself through
 * imports is a cycle, and the check fails naming the folders, and a file import behind each of
 * their edges.
 *
 * Run: node --import tsx scripts/folder-cycles.ts [--graph]  (--graph prints every folder edge
 * with the number of file imports behind it, then the cycles).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const src = fileURLToPath(new URL('../src/', import.meta.url));

/** The folder a file of src/ belongs to, or null. */
function folderOf(file: string): string | null {
  const parts = file.split('/');
  if (parts.length > 1) return parts[0]!;
  const own = file.replace(/\.ts$/, '');
  return existsSync(`${src}${own}`) ? own : null;
}

/** Folder edges, each with the file imports behind it. */
function folderGraph(files: Record<string, string[]>): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const [file, deps] of Object.entries(files)) {
    const from = folderOf(file);
    if (from === null || file.endsWith('.test.ts')) continue;
    for (const dep of deps) {
      const to = folderOf(dep);
      if (to === null || to === from || dep.startsWith('..')) continue;
      const edges = graph.get(from) ?? new Map<string, string[]>();
      graph.set(from, edges);
      edges.set(to, [...(edges.get(to) ?? []), `${file} -> ${dep}`]);
    }
  }
  return graph;
}

/** The strongly connected components of more than one folder (Tarjan). */
function cycles(graph: Map<string, Map<string, string[]>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** `madge --json --extensions ts src`: each file of src/ and the files it imports. */
function fileGraph(): Record<string, string[]> {
  const cli = join(dirname(createRequire(import.meta.url).resolve('madge/package.json')), 'bin/cli.js');
  const json = execFileSync(process.execPath, [cli, '--json', '--extensions', 'ts', src], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(json) as Record<string, string[]>;
}

const graph = folderGraph(fileGraph());
if (process.argv.includes('--graph')) {
  const lines = [...graph]
    .flatMap(([from, edges]) => [...edges].map(([to, imports]) => `${from} -> ${to} ${imports.length}`))
    .sort();
  console.log(`${lines.length} folder edges`);
  for (const line of lines) console.log(line);
}
const found = cycles(graph);
for (const component of found) {
  console.error(`folder cycle: ${component.join(', ')}`);
  for (const from of component) {
    for (const [to, imports] of graph.get(from) ?? []) {
      if (!component.includes(to)) continue;
      const more = imports.length > 1 ? ` (and ${imports.length - 1} more)` : '';
      console.error(`  ${from} -> ${to}: ${imports[0]!}${more}`);
    }
  }
}
if (found.length > 0) {
  console.error('Folders must form layers: move the shared piece down to a folder both may import.');
  process.exit(1);
}
console.log(`no folder-level import cycles among ${graph.size} folders of src/`);
