/**
 * The bench's own view of Redis: a private server (never the shared one on 6379), flushed between
 * runs, and the INFO figures the workloads read (CPU, memory, per-command call counts).
 */
import { Redis } from 'ioredis';
import { startRedis, type RedisServer } from '../../src/testing/redis-server.js';

/** A private redis-server plus a control connection to it. */
export interface BenchRedis {
  server: RedisServer;
  control: Redis;
  url: string;
  stop(): Promise<void>;
}

/** Start a throwaway redis-server (no persistence) on a free port. */
export async function startBenchRedis(): Promise<BenchRedis> {
  const server = await startRedis({ args: ['--appendonly', 'no'] });
  const control = new Redis(server.url, { lazyConnect: false });
  return {
    server,
    control,
    url: server.url,
    async stop() {
      control.disconnect();
      await server.stop();
    },
  };
}

/** Empty the server and zero its statistics between runs. */
export async function reset(control: Redis): Promise<void> {
  await control.flushall();
  await control.config('RESETSTAT');
}

function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  return fields;
}

/** Redis CPU time so far (user + system), in microseconds. */
export async function cpuMicros(control: Redis): Promise<number> {
  const f = infoFields(await control.info('cpu'));
  return (Number(f.get('used_cpu_user')) + Number(f.get('used_cpu_sys'))) * 1e6;
}

/** used_memory in bytes. */
export async function usedMemory(control: Redis): Promise<number> {
  return Number(infoFields(await control.info('memory')).get('used_memory'));
}

/** Calls per command so far (INFO commandstats; commands run inside scripts are counted too). */
export async function commandCalls(control: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const [key, value] of infoFields(await control.info('commandstats'))) {
    const match = /calls=(\d+)/.exec(value);
    if (key.startsWith('cmdstat_') && match) calls.set(key.slice('cmdstat_'.length), Number(match[1]));
  }
  return calls;
}

/**
 * Commands between two snapshots, leaving out what the bench's control connection itself sends
 * (INFO, CONFIG, FLUSHALL): what remains is the queue's own traffic.
 */
export function callsBetween(before: Map<string, number>, after: Map<string, number>): number {
  const own = new Set(['info', 'config|resetstat', 'config|get', 'flushall', 'config']);
  let total = 0;
  for (const [name, calls] of after) {
    if (own.has(name)) continue;
    total += calls - (before.get(name) ?? 0);
  }
  return total;
}

/** The commands that run a script: one call each, whatever the script then runs inside. */
const SCRIPT_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);

/** Script calls between two snapshots (EVAL, EVALSHA, FCALL and their read-only forms). */
export function scriptCallsBetween(before: Map<string, number>, after: Map<string, number>): number {
  let total = 0;
  for (const [name, calls] of after) {
    if (SCRIPT_COMMANDS.has(name)) total += calls - (before.get(name) ?? 0);
  }
  return total;
}
