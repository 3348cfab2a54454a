/**
 * One-line mutants of each step of the claim (docs/TESTING.md, "The claim's steps and the tests
 * that kill their mutants"), each run against the deterministic test named for it. A mutant is
 * found by its text in any script under src/scripts/ (so it follows the logic when the claim is
 * split into include files; it must be there exactly once), written into the file, the named test
 * is run alone (`vitest run <file> -t <name>`, one worker), and the file is written back, whatever
 * happens. Each test is first run on the unchanged source, where it must pass.
 *
 *   node --import tsx scripts/claim-mutants.ts               every mutant; prints the table
 *   node --import tsx scripts/claim-mutants.ts --only fencing the rows of one step
 *
 * Exits 1 when a mutant survives, its text is not found exactly once, or a test fails unchanged.
 * Slow (a vitest run per row, each starting a redis-server): not part of `npm test`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

interface Mutant {
  step: string;
  /** What the mutant does, in words. */
  what: string;
  /** The exact text replaced (found once in src/scripts/**.lua) and its replacement. */
  from: string;
  to: string;
  /** The test that must fail: its file and (a unique part of) its name. */
  file: string;
  test: string;
}

export const MUTANTS: readonly Mutant[] = [
  {
    step: 'due check',
    what: 'the ZPOPMIN path takes a head due up to 2 s after the cutoff',
    from: 'if due <= c.cutoff then return',
    to: 'if due <= c.cutoff + 2000 then return',
    file: 'test/conformance/zpopmin.test.ts',
    test: 'a claim leases no job before its due time by the Redis clock',
  },
  {
    step: 'due check',
    what: 'the read of due heads (default class and groups) reaches 2 s past the cutoff',
    from: 'cutoff_text = cutoff == now and now_text or ms_text(cutoff),',
    to: 'cutoff_text = ms_text(cutoff + 2000),',
    file: 'test/conformance/range.test.ts',
    test: 'a claim leases no job before its due time by the Redis clock',
  },
  {
    step: 'due check',
    what: 'prioritized jobs promoted from p up to 2 s before due',
    from: '    if due > now then\n      next_at = due',
    to: '    if due > now + 2000 then\n      next_at = due',
    file: 'test/conformance/zpopmin.test.ts',
    test: 'a claim leases no prioritized or grouped job before its due time',
  },
  {
    step: 'fencing',
    what: "an ack whose known deadline is ahead applies whether or not its member's ZREM removed it",
    from: "if redis.call('ZREM', K.a, ARGV[at]) == 1 then fact[i] = CLAIM_ACK_REMOVED end",
    to: "if redis.call('ZREM', K.a, ARGV[at]) >= 0 then fact[i] = CLAIM_ACK_REMOVED end",
    file: 'test/hotpath/claim.test.ts',
    test: 'a single ack (concurrency 1): its ZREM alone decides while its known deadline is ahead',
  },
  {
    step: 'fencing',
    what: 'an ack read by score applies at its lease deadline (off by one)',
    from: 'score > now and CLAIM_ACK_IN_A',
    to: 'score >= now and CLAIM_ACK_IN_A',
    file: 'test/model/model.test.ts',
    test: 'a hand-built sequence: priorities, a lease lost and reaped on claim, a stale ack refused',
  },
  {
    step: 'group bound',
    what: 'the group concurrency read one higher than recorded',
    from: 'group_max = math.max(tonumber(ARGV[4]), 1),',
    to: 'group_max = math.max(tonumber(ARGV[4]), 1) + 1,',
    file: 'test/conformance/zpopmin.test.ts',
    test: 'groups: a claim leases no more of a group than its bound leaves room for',
  },
  {
    step: 'group bound',
    what: "a grouped take not counted in the group's running count",
    from: "local running = redis.call('HINCRBY', K.gc, g, '1')",
    to: "local running = redis.call('HINCRBY', K.gc, g, '0') + 1",
    file: 'test/conformance/range.test.ts',
    test: 'groups: a claim leases no more of a group than its bound leaves room for',
  },
  {
    step: 'priority order',
    what: 'the merge of r and the default class takes the higher priority first',
    from: 'if r_score and (not d_score or r_score < d_score) then',
    to: 'if r_score and (not d_score or r_score > d_score) then',
    file: 'test/hotpath/claim.test.ts',
    test: 'takes due jobs lower priority first, equal priorities in due order, the default class as 0',
  },
  {
    step: 'pause',
    what: 'the pause gate never shuts',
    from: "special > 0 and redis.call('EXISTS', K.z) == 1",
    to: "special > 0 and redis.call('EXISTS', K.z) == 2",
    file: 'test/hotpath/claim.test.ts',
    test: 'takes nothing while the queue is paused, but still applies the acks',
  },
  {
    step: 'rate window',
    what: 'one start more than the rate allows per window',
    from: "local allowed = c.s.rate_max - redis.call('ZCARD', K.lim)",
    to: "local allowed = c.s.rate_max + 1 - redis.call('ZCARD', K.lim)",
    file: 'test/hotpath/claim.test.ts',
    test: 'starts no more than the rate allows in a window, and says when the window reopens',
  },
  {
    step: 'rate window',
    what: 'the window forgets every start up to now, not only those older than the window',
    from: "redis.call('ZREMRANGEBYSCORE', K.lim, '-inf', now - c.s.rate_per_ms)",
    to: "redis.call('ZREMRANGEBYSCORE', K.lim, '-inf', now)",
    file: 'test/hotpath/claim.test.ts',
    test: 'starts no more than the rate allows in a window, and says when the window reopens',
  },
  {
    step: 'reap',
    what: 'reap-on-claim skips a lease whose deadline is exactly now',
    from: 'if head_at == -1 or head_at > c.now then return 0, head_at end',
    to: 'if head_at == -1 or head_at >= c.now then return 0, head_at end',
    file: 'test/model/model.test.ts',
    test: 'a hand-built sequence: priorities, a lease lost and reaped on claim, a stale ack refused',
  },
  {
    step: 'reap',
    what: 'reap-on-claim never runs',
    from: 'if leased < c.limit then',
    to: 'if leased < 0 then',
    file: 'test/hotpath/claim.test.ts',
    test: 'reaps an expired lease when the batch is not full, and takes the job again in the same call',
  },
];

/** Every .lua file under src/scripts/. */
function luaFiles(dir = join(ROOT, 'src/scripts')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? luaFiles(join(dir, entry.name))
      : entry.name.endsWith('.lua')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** Where `text` occurs in the scripts: [file, count] for each file holding it. */
function occurrences(text: string): Array<[string, number]> {
  return luaFiles()
    .map((file): [string, number] => [file, readFileSync(file, 'utf8').split(text).length - 1])
    .filter(([, n]) => n > 0);
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface Outcome {
  failed: number;
  passed: number;
}

/** Run the tests of `file` whose name holds `test`; how many failed and passed. */
function runTest(file: string, test: string): Outcome {
  const dir = mkdtempSync(join(tmpdir(), 'claim-mutants-'));
  const out = join(dir, 'report.json');
  try {
    spawnSync(
      'npx',
      [
        'vitest',
        'run',
        file,
        '--maxWorkers=1',
        '-t',
        escapeRegExp(test),
        '--reporter=json',
        `--outputFile=${out}`,
      ],
      { cwd: ROOT, stdio: 'ignore', env: { ...process.env, DELAYQ_LOG_LEVEL: 'error' } },
    );
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      numFailedTests: number;
      numPassedTests: number;
    };
    return { failed: report.numFailedTests, passed: report.numPassedTests };
  } catch {
    return { failed: 0, passed: 0 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function main(): void {
  const onlyAt = process.argv.indexOf('--only');
  const only = onlyAt === -1 ? undefined : process.argv[onlyAt + 1];
  const rows = MUTANTS.filter((m) => only === undefined || m.step === only);
  if (rows.length === 0)
    throw new Error(
      `no mutant of step '${String(only)}'; steps: ${[...new Set(MUTANTS.map((m) => m.step))].join(', ')}`,
    );
  let bad = 0;
  const baseline = new Map<string, Outcome>();
  const lines = ['| step | mutant (one line) | killed by | result |', '| --- | --- | --- | --- |'];
  for (const m of rows) {
    const key = `${m.file}\n${m.test}`;
    if (!baseline.has(key)) baseline.set(key, runTest(m.file, m.test));
    const base = baseline.get(key)!;
    const found = occurrences(m.from);
    let result: string;
    let where = '';
    if (base.failed > 0 || base.passed === 0) {
      result = `the test does not pass unchanged (${base.passed} passed, ${base.failed} failed)`;
    } else if (found.length !== 1 || found[0]![1] !== 1) {
      result = `mutant text found ${found.reduce((n, [, c]) => n + c, 0)} times: update this row`;
    } else {
      const [file] = found[0]!;
      where = relative(ROOT, file);
      const original = readFileSync(file, 'utf8');
      const restore = (): void => writeFileSync(file, original);
      const interrupted = (): void => {
        restore();
        process.exit(130);
      };
      process.once('SIGINT', interrupted);
      try {
        writeFileSync(file, original.replace(m.from, m.to));
        const run = runTest(m.file, m.test);
        result = run.failed > 0 ? 'killed' : `SURVIVED (${run.passed} passed)`;
      } finally {
        restore();
        process.removeListener('SIGINT', interrupted);
      }
    }
    if (result !== 'killed') bad++;
    const code = (text: string) =>
      `\`${text
        .trim()
        .replace(/\s*\n\s*/g, ' ')
        .replace(/\|/g, '\\|')}\``;
    lines.push(
      `| ${m.step} | ${m.what}: ${code(m.from)} → ${code(m.to)} | ${m.file} "${m.test}" | ${result} |`,
    );
    console.error(`${m.step}: ${m.what} (${where || 'not applied'}): ${result}`);
  }
  console.log(lines.join('\n'));
  process.exitCode = bad > 0 ? 1 : 0;
}

main();
