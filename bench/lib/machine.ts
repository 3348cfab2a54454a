/** The machine and the versions a run used, for the report's header. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, totalmem, availableParallelism } from 'node:os';

/** Where and with what a run happened. */
export interface Environment {
  nproc: number;
  cpuModel: string;
  memoryGiB: number;
  versions: Record<string, string>;
  /** The delayq commit measured (absent in results saved before it was recorded on its own). */
  commit?: string;
  /** Whether src/ had uncommitted changes, so the figures are not the commit's. */
  dirty?: boolean;
}

function packageVersion(name: string): string {
  const url = new URL(`../../node_modules/${name}/package.json`, import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
}

function commandOutput(command: string, args: string[]): string | null {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** Read the machine and the versions of everything compared. */
export function describeEnvironment(): Environment {
  const own = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  // BENCH_DELAYQ_COMMIT names the commit when the bench runs from an exported tree (git archive).
  const commit =
    process.env['BENCH_DELAYQ_COMMIT'] ?? commandOutput('git', ['rev-parse', '--short', 'HEAD']) ?? 'unknown';
  const status = commandOutput('git', ['status', '--porcelain', '--', 'src']);
  const dirty = status !== null && status !== '';
  const redis = /v=(\S+)/.exec(commandOutput('redis-server', ['--version']) ?? '')?.[1] ?? 'unknown';
  return {
    nproc: availableParallelism(),
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    commit,
    dirty,
    versions: {
      delayq: `${own.version} (commit ${commit}${dirty ? ', with uncommitted changes in src/' : ''})`,
      bullmq: packageVersion('bullmq'),
      'bee-queue': packageVersion('bee-queue'),
      ioredis: packageVersion('ioredis'),
      node: process.version,
      'redis-server': redis,
    },
  };
}
