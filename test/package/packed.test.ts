/**
 * The package as npm would install it. The current sources are built in a staging copy (the repo's
 * own dist/ is left alone, other tests run it) and packed once with `npm pack`; the tarball is
 * installed into a fresh project (`npm init -y`: CommonJS by default) with TypeScript, @types/node
 * and the optional peers. Then, against that one install:
 * - every relative link and image of each Markdown file the tarball holds (README.md, CHANGELOG.md,
 *   docs/*.md, ...) names a file the tarball holds, and each #fragment a heading of that file;
 * - a program using every entry point type-checks with skipLibCheck false, strict and
 *   exactOptionalPropertyTypes, as an ES module and as a CommonJS file, and every type the public
 *   signatures mention can be named (is exported by an entry point);
 * - each entry point loads with ESM `import` and with CommonJS `require`;
 * - every import the README's code blocks take from 'delayq' or 'delayq/...' resolves, with ESM,
 *   CommonJS and TypeScript, and every `delayq <command> --flag` of its shell blocks exists in the
 *   installed CLI's --help. The lists are parsed from README.md, so a README change is checked as is.
 */
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, type CommandResult } from '../support/run-command.js';
import { unexportedTypes } from './public-types.js';
import { fragmentOf, headingAnchors, ownAnchorLinks, relativeLinks, unresolved } from './markdown-links.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
/** A type check reads the .d.ts files of delayq and its dependencies: tens of seconds on a loaded host. */
const TYPE_CHECK_MS = 120_000;
/** The package's entry points, as package.json's exports map names them. */
const ENTRIES = ['delayq', 'delayq/dashboard', 'delayq/metrics', 'delayq/testing', 'delayq/nestjs'];
/** A name no entry point exports: each check must report it, or the check itself is broken. */
const CANARY = 'notExportedByDelayq';

interface ReadmeImport {
  specifier: string;
  values: string[];
  types: string[];
}

interface ReadmeCommand {
  line: string;
  command: string;
  flags: string[];
}

/** The fenced code blocks of a Markdown text, with their info string. */
function codeBlocks(markdown: string): Array<{ lang: string; code: string }> {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map((m) => ({ lang: m[1]!, code: m[2]! }));
}

/** Every `import { ... } from 'delayq...'` of the README's TypeScript and JavaScript blocks. */
function readmeImports(markdown: string): ReadmeImport[] {
  const out: ReadmeImport[] = [];
  for (const { lang, code } of codeBlocks(markdown)) {
    if (!['ts', 'js', 'typescript', 'javascript', 'mjs', 'cjs'].includes(lang)) continue;
    for (const m of code.matchAll(/import\s+(type\s+)?\{([^}]*)\}\s*from\s*['"](delayq(?:\/[\w-]+)?)['"]/g)) {
      const typeOnly = m[1] !== undefined;
      const entry: ReadmeImport = { specifier: m[3]!, values: [], types: [] };
      for (const raw of m[2]!.split(',')) {
        const part = raw.trim();
        if (part === '') continue;
        const [, typeKeyword, name] = /^(type\s+)?([\w$]+)/.exec(part) ?? [];
        if (name === undefined) throw new Error(`cannot read the import ${JSON.stringify(part)}`);
        (typeOnly || typeKeyword ? entry.types : entry.values).push(name);
      }
      out.push(entry);
    }
  }
  return out;
}

/** Every `delayq <command> ...` line of the README's shell blocks, with the flags it uses. */
function readmeCommands(markdown: string): ReadmeCommand[] {
  const out: ReadmeCommand[] = [];
  for (const { lang, code } of codeBlocks(markdown)) {
    if (!['sh', 'bash', 'shell', 'console'].includes(lang)) continue;
    for (const raw of code.split('\n')) {
      const line = raw.replace(/\s+#.*$/, '').trim();
      const m = /^delayq\s+([a-z][\w-]*)(.*)$/.exec(line);
      if (!m) continue;
      const flags = [...m[2]!.matchAll(/(?:^|\s)(--[a-z][\w-]*)/g)].map((f) => f[1]!);
      out.push({ line, command: m[1]!, flags });
    }
  }
  return out;
}

function run(command: string, args: string[], cwd: string, timeoutMs = 180_000): Promise<CommandResult> {
  const env = { ...process.env, NO_COLOR: '1', npm_config_update_notifier: 'false' };
  return runCommand(command, args, { cwd, env, timeoutMs });
}

async function mustRun(command: string, args: string[], cwd: string): Promise<string> {
  const r = await run(command, args, cwd);
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${r.code}:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const imports = readmeImports(readme);
const commands = readmeCommands(readme);
const work = mkdtempSync(join(tmpdir(), 'delayq-package-'));
const consumer = join(work, 'consumer');
/** The tarball's files, relative to the package root (npm packs them under package/). */
let packed: string[] = [];
afterAll(() => rmSync(work, { recursive: true, force: true }));

beforeAll(async () => {
  // A copy of what the build reads, so the build does not rewrite dist/ under the CLI tests' feet.
  const staging = join(work, 'staging');
  // Everything package.json's `files` may pick, and what the build reads.
  const { files = [] } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files?: string[] };
  const tops = new Set(files.filter((f) => !f.startsWith('!')).map((f) => f.split('/')[0]!));
  // README.md: npm packs it whatever `files` says.
  for (const entry of [
    'package.json',
    'README.md',
    'tsconfig.json',
    'tsconfig.build.json',
    'src',
    'scripts',
    ...tops,
  ]) {
    if (entry !== 'dist' && existsSync(join(ROOT, entry))) {
      cpSync(join(ROOT, entry), join(staging, entry), { recursive: true });
    }
  }
  symlinkSync(join(ROOT, 'node_modules'), join(staging, 'node_modules'), 'dir');
  // The build, then the pack without its prepack script (which would build a second time).
  await mustRun('npm', ['run', '--silent', 'build'], staging);
  await mustRun('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', work], staging);
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
  if (tarball === undefined) throw new Error('npm pack wrote no tarball');
  packed = (await mustRun('tar', ['-tzf', join(work, tarball)], work))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.replace(/^package\//, ''));

  mkdirSync(consumer);
  await mustRun('npm', ['init', '-y'], consumer);
  // The optional peers too (a Nest app has Nest): delayq/nestjs cannot load without them. The
  // versions this repo tests against, so npm finds them in its cache.
  const { peerDependencies = {} } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    peerDependencies?: Record<string, string>;
  };
  const peers = Object.keys(peerDependencies).map((name) => {
    const { version } = JSON.parse(
      readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'),
    ) as { version: string };
    return `${name}@${version}`;
  });
  // TypeScript and the Node.js types the repo uses too (in npm's cache): the type checks below.
  const tools = ['typescript', '@types/node'].map((name) => {
    const { version } = JSON.parse(
      readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'),
    ) as { version: string };
    return `${name}@${version}`;
  });
  await mustRun(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', join(work, tarball), ...peers, ...tools],
    consumer,
  );
}, 300_000);

describe('the tarball', () => {
  /** Each Markdown file of the tarball, as installed, with its text. */
  const shippedMarkdown = (): Array<{ file: string; text: string }> =>
    packed
      .filter((f) => f.endsWith('.md'))
      .map((file) => ({ file, text: readFileSync(join(consumer, 'node_modules/delayq', file), 'utf8') }));

  it('holds every file the relative links and images of its Markdown files name', () => {
    const shipped = shippedMarkdown();
    // README.md, CHANGELOG.md, CONTRIBUTING.md and docs/*.md at least.
    expect(shipped.map((d) => d.file)).toEqual(
      expect.arrayContaining(['README.md', 'CHANGELOG.md', 'docs/ARCHITECTURE.md', 'docs/PROTOCOL.md']),
    );
    expect(packed).toEqual(expect.arrayContaining(['dist/index.js', 'package.json']));
    const links = shipped.flatMap(({ file, text }) =>
      relativeLinks(text, file).map((l) => ({ ...l, from: file })),
    );
    expect(links.filter((l) => l.from === 'README.md').length).toBeGreaterThan(0);
    expect(links.filter((l) => l.from.startsWith('docs/')).length).toBeGreaterThan(0);
    expect(unresolved(links, packed).map((l) => `${l.from}:${l.line} ${l.target}`)).toEqual([]);
    // The same check reports a link to a file the tarball lacks, and resolves from the linking file.
    const canary = relativeLinks('See [it](manual/not-shipped.md#part) and ![x](./docs/images/none.png).');
    expect(unresolved(canary, packed).map((l) => l.file)).toEqual([
      'manual/not-shipped.md',
      'docs/images/none.png',
    ]);
    const fromDocs = relativeLinks(
      '[p](PROTOCOL.md), [r](../README.md), [s](../src/index.ts), [o](../../outside.md)',
      'docs/SECURITY.md',
    );
    expect(unresolved(fromDocs, packed).map((l) => l.file)).toEqual(['src/index.ts', '../outside.md']);
  });

  it("names a heading of the linked file in each link's #fragment, in every shipped Markdown file", () => {
    const installed = join(consumer, 'node_modules/delayq');
    const targets = shippedMarkdown().flatMap(({ file, text }) => [
      ...relativeLinks(text, file).filter((l) => l.file.endsWith('.md')),
      // Links within the file: [Pause and resume](#pause-and-resume).
      ...ownAnchorLinks(text, file),
    ]);
    const broken = targets.filter((link) => {
      const fragment = fragmentOf(link);
      return (
        fragment !== undefined &&
        !headingAnchors(readFileSync(join(installed, link.file), 'utf8')).has(fragment)
      );
    });
    expect(targets.filter((l) => fragmentOf(l) !== undefined).length).toBeGreaterThan(1);
    expect(broken.map((l) => `${l.file} ${l.target}`)).toEqual([]);
    expect(headingAnchors('# A\n## Upgrading from 0.1\n### `delayq/testing`: helpers\n## A')).toEqual(
      new Set(['a', 'upgrading-from-01', 'delayqtesting-helpers', 'a-1']),
    );
  });

  it('ships no source map and no test harness', () => {
    expect(packed.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(packed.filter((f) => /(^|\/)(test|tests|__tests__)\/|\.test\.[cm]?[jt]s$/.test(f))).toEqual([]);
    expect(packed.filter((f) => /redis-(cluster|sentinel)/.test(f))).toEqual([]);
  });
});

describe('types, in a fresh project with skipLibCheck false', () => {
  const compilerOptions = {
    module: 'nodenext',
    target: 'es2022',
    strict: true,
    exactOptionalPropertyTypes: true,
    skipLibCheck: false,
    noEmit: true,
    types: ['node'],
  };

  it(
    'a program using every entry point type-checks, as an ES module and as CommonJS',
    async () => {
      for (const file of ['program.mts', 'program.cts']) {
        cpSync(join(ROOT, 'test/package/consumer', file), join(consumer, file));
      }
      writeFileSync(
        join(consumer, 'tsconfig.strict.json'),
        JSON.stringify({ compilerOptions, files: ['program.mts', 'program.cts'] }),
      );
      const localTsc = join(consumer, 'node_modules/typescript/bin/tsc');
      const r = await run(
        process.execPath,
        [localTsc, '-p', 'tsconfig.strict.json', '--pretty', 'false'],
        consumer,
      );
      expect(r.stdout + r.stderr).toBe('');
      expect(r.code).toBe(0);
      // Every entry point is used.
      const used = ['program.mts', 'program.cts']
        .map((f) => readFileSync(join(consumer, f), 'utf8'))
        .join('\n');
      for (const entry of ENTRIES) expect(used).toContain(`from '${entry}'`);
    },
    TYPE_CHECK_MS,
  );

  it(
    'every type a public signature mentions is exported by an entry point',
    () => {
      const program = ts.createProgram([join(consumer, 'program.mts')], {
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        strict: true,
        noEmit: true,
        types: ['node'],
        typeRoots: [join(consumer, 'node_modules/@types')],
      });
      const missing = unexportedTypes(program, ENTRIES, join(consumer, 'node_modules/delayq'));
      expect(missing.map((t) => `${t.name} (${t.file}, reached from ${t.reachedFrom})`)).toEqual([]);
    },
    TYPE_CHECK_MS,
  );

  it('the unexported-type check reports what a package leaves out', () => {
    // A package whose export mentions a local type and a type of another file it does not re-export.
    const pkg = join(work, 'walker/node_modules/fake');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name: 'fake', type: 'module', exports: { '.': { types: './index.d.ts' } } }),
    );
    writeFileSync(
      join(pkg, 'index.d.ts'),
      [
        "import type { Hidden } from './other.js';",
        'interface Local { hidden: Hidden }',
        'export interface Shown { n: number }',
        'export declare function make(shown: Shown): Local;',
        'export declare class Box { private secret; private readonly inner: Private; value(): Shown }',
        'interface Private { x: number }',
        // As tsc writes it: without this line every declaration of a .d.ts module is exported.
        'export {};',
      ].join('\n'),
    );
    writeFileSync(join(pkg, 'other.d.ts'), 'export interface Hidden { at: Date }\n');
    const root = join(work, 'walker/main.mts');
    writeFileSync(root, "import * as fake from 'fake';\nexport { fake };\n");
    const program = ts.createProgram([root], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      noEmit: true,
      types: [],
    });
    expect(unexportedTypes(program, ['fake'], pkg).map((t) => [t.name, t.file, t.reachedFrom])).toEqual([
      ['Hidden', 'other.d.ts', 'fake: make'],
      ['Local', 'index.d.ts', 'fake: make'],
    ]);
  });
});

describe('the entry points at run time', () => {
  it('each loads with ESM import and with CommonJS require, with the same exports', async () => {
    const script = (load: (s: string) => string): string =>
      [
        'const out = {};',
        ...ENTRIES.map((e) => `out[${JSON.stringify(e)}] = Object.keys(${load(e)}).sort();`),
        'console.log(JSON.stringify(out));',
      ].join('\n');
    writeFileSync(
      join(consumer, 'entries.mjs'),
      script((s) => `await import('${s}')`),
    );
    writeFileSync(
      join(consumer, 'entries.cjs'),
      script((s) => `require('${s}')`),
    );
    const esm = JSON.parse(await mustRun(process.execPath, ['entries.mjs'], consumer)) as Record<
      string,
      string[]
    >;
    const cjs = JSON.parse(await mustRun(process.execPath, ['entries.cjs'], consumer)) as Record<
      string,
      string[]
    >;
    for (const entry of ENTRIES) {
      expect(esm[entry]!.filter((k) => k !== 'default' && k !== '__esModule').length, entry).toBeGreaterThan(
        0,
      );
      expect(
        cjs[entry]!.filter((k) => k !== '__esModule'),
        entry,
      ).toEqual(esm[entry]!.filter((k) => k !== '__esModule'));
    }
    expect(esm['delayq']).toEqual(expect.arrayContaining(['Queue', 'Worker', 'Scheduler']));
  });
});

/** Source of a script that loads each entry point and prints the names it lacks, as JSON. */
function checkScript(load: (specifier: string) => string): string {
  const lines = imports.map(
    (imp, i) =>
      `const m${i} = ${load(imp.specifier)};\n` +
      `for (const name of ${JSON.stringify(imp.values)}) if (m${i}[name] === undefined) missing.push(name + ' from ${imp.specifier}');`,
  );
  return [
    'const missing = [];',
    ...lines,
    `if (${load('delayq')}[${JSON.stringify(CANARY)}] === undefined) missing.push('${CANARY} from delayq');`,
    'console.log(JSON.stringify(missing));',
  ].join('\n');
}

describe("the README's imports, from the packed package", () => {
  it('the parser finds every import from delayq in the code blocks', () => {
    const mentioned = codeBlocks(readme).flatMap(({ code }) => [...code.matchAll(/from\s+['"]delayq/g)]);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports).toHaveLength(mentioned.length);
    expect(commands.length).toBeGreaterThan(0);
  });

  it('ESM import: every named value export exists', async () => {
    writeFileSync(
      join(consumer, 'check.mjs'),
      checkScript((s) => `await import('${s}')`),
    );
    const out = await mustRun(process.execPath, ['check.mjs'], consumer);
    // The canary alone: the check can fail, and nothing the README names is missing.
    expect(JSON.parse(out)).toEqual([`${CANARY} from delayq`]);
  });

  it('CommonJS require: every named value export exists', async () => {
    writeFileSync(
      join(consumer, 'check.cjs'),
      checkScript((s) => `require('${s}')`),
    );
    const out = await mustRun(process.execPath, ['check.cjs'], consumer);
    expect(JSON.parse(out)).toEqual([`${CANARY} from delayq`]);
  });

  it('TypeScript (module nodenext): every name resolves, in an ES module and in a CommonJS file', async () => {
    const source =
      imports
        .map((imp, i) => {
          // Aliased: the README imports some names in several blocks.
          const names = [...imp.values, ...imp.types].map((name) => `${name} as ${name}_${i}`);
          return `import type { ${names.join(', ')} } from '${imp.specifier}';`;
        })
        .join('\n') + '\nexport {};\n';
    writeFileSync(join(consumer, 'types.mts'), source);
    writeFileSync(join(consumer, 'types.cts'), source);
    writeFileSync(join(consumer, 'canary.mts'), `import type { ${CANARY} } from 'delayq';\nexport {};\n`);
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          // Types of delayq's own dependencies (node:http, ioredis) are not what is checked here.
          skipLibCheck: true,
          types: [],
        },
        files: ['types.mts', 'types.cts', 'canary.mts'],
      }),
    );
    const r = await run(process.execPath, [TSC, '-p', 'tsconfig.json', '--pretty', 'false'], consumer);
    const errors = r.stdout.split('\n').filter((l) => /error TS\d+/.test(l));
    expect(errors.filter((l) => !l.startsWith('canary.mts'))).toEqual([]);
    // The canary's error: the check can fail.
    expect(errors).toEqual([expect.stringMatching(new RegExp(`^canary\\.mts.*'${CANARY}'`))]);
  });
});

describe('what the package does not publish', () => {
  it('internals are absent from the .d.ts files; Job is a type, not a value', async () => {
    const dist = join(consumer, 'node_modules/delayq/dist');
    const queueTypes = readFileSync(join(dist, 'queue.d.ts'), 'utf8');
    for (const internal of [
      /\bkeysOf\(/,
      /\bget client\(/,
      /readonly keys:/,
      /readonly partitions:/,
      /\bretryDead\(/,
      /\bremoveDead\(/,
      /\bassertOpen\(/,
      /\bassertUnpartitioned\(/,
    ]) {
      expect(queueTypes).not.toMatch(internal);
    }
    // Still there: the public surface the internals sit beside (the dead set's class has its own file).
    const deadTypes = readFileSync(join(dist, 'queue/dead-letters.d.ts'), 'utf8');
    expect(deadTypes).toMatch(/retryAll\(opts\?/);
    expect(deadTypes).not.toMatch(/constructor\(/);
    expect(readFileSync(join(dist, 'job.d.ts'), 'utf8')).not.toMatch(/constructor\(/);
    const out = await mustRun(
      process.execPath,
      ['-e', "const d = require('delayq'); console.log(typeof d.Job, typeof d.Queue)"],
      consumer,
    );
    expect(out.trim()).toBe('undefined function');
  });
});

describe("the README's CLI commands, in the installed delayq", () => {
  const help = async (...args: string[]): Promise<string> =>
    mustRun(
      process.execPath,
      [join(consumer, 'node_modules/delayq/dist/cli/main.js'), ...args, '--help'],
      consumer,
    );

  it('the bin is installed', async () => {
    const r = await run(join(consumer, 'node_modules/.bin/delayq'), ['--help'], consumer);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: delayq/m);
  });

  it('every command and flag the README shows exists', async () => {
    const top = await help();
    const problems: string[] = [];
    for (const { line, command, flags } of commands) {
      if (!new RegExp(`^\\s+${command}\\b`, 'm').test(top)) {
        problems.push(`${line}: no command '${command}'`);
        continue;
      }
      const own = await help(command);
      for (const flag of flags) {
        const known = new RegExp(`(^|[\\s,])${flag}\\b`, 'm');
        if (!known.test(own) && !known.test(top)) problems.push(`${line}: '${command}' has no ${flag}`);
      }
    }
    expect(problems).toEqual([]);
    // The same check on a line the CLI does not have must complain.
    expect(new RegExp(`^\\s+frobnicate\\b`, 'm').test(top)).toBe(false);
  });
});
