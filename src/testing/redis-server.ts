/**
 * Throwaway redis-server processes for tests: each on a free loopback port, in its own temp dir,
 * stopped by pid. No test touches the machine's shared Redis on 6379.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RedisServerOptions {
  /** Extra redis-server arguments, e.g. ['--appendonly', 'yes'] or ['--rename-command', 'ZPOPMIN', '""']. */
  args?: string[];
  /** Reuse a port (to restart a server where clients expect it). */
  port?: number;
  /** Reuse a data dir (to restart with the same AOF). */
  dir?: string;
  /** A config file given as the first argument (a Sentinel needs one it can rewrite); `args` override it. */
  configFile?: string;
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  readonly pid: number;
  /** Stop the server (SIGTERM, then SIGKILL after 5 s) and remove its dir unless `keepDir`. */
  stop(opts?: { keepDir?: boolean; signal?: NodeJS.Signals }): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A free TCP port on 127.0.0.1, as reported by the kernel for a port-0 bind. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Start a redis-server and resolve once it answers PING. */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'delayq-redis-')));
  // A port chosen by the kernel can be taken by someone else before redis binds it: retry.
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    const args = [
      ...(options.configFile === undefined ? [] : [options.configFile]),
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--daemonize',
      'no',
      '--logfile',
      join(dir, 'redis.log'),
      ...(options.args ?? []),
    ];
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    running.add(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.once('exit', () => running.delete(child));
    const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
    const ready = await Promise.race([
      waitForPing(port, 10_000).then(() => 'ready' as const),
      exited.then(() => 'exited' as const),
      spawnError.then((err) => {
        throw new Error(`could not start redis-server (is it installed and on PATH?): ${err.message}`);
      }),
    ]);
    if (ready === 'ready') {
      const pid = child.pid ?? 0;
      return {
        port,
        url: `redis://127.0.0.1:${port}`,
        dir,
        pid,
        async stop({ keepDir = false, signal = 'SIGTERM' } = {}) {
          if (child.exitCode === null && child.signalCode === null) {
            const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
            child.kill(signal);
            await exited;
            clearTimeout(timer);
          }
          if (ownDir && !keepDir) await rm(dir, { recursive: true, force: true });
        },
      };
    }
    if (attempt >= 5 || options.port !== undefined) {
      throw new Error(`redis-server exited at start on port ${port}; see ${join(dir, 'redis.log')}`);
    }
  }
}

/** Resolve when something on the port answers +PONG; reject after `timeoutMs`. */
async function waitForPing(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await pingOnce(port)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`);
}

function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let answer = '';
    socket.setTimeout(500);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      answer += chunk.toString();
      if (answer.includes('\r\n')) {
        socket.destroy();
        resolve(answer.startsWith('+PONG'));
      }
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
