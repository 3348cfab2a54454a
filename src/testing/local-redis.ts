/**
 * Finds a Redis for the demo and the CLI: REDIS_URL, else 127.0.0.1:6379, else a private
 * redis-server started from PATH on a free port (stopped again on exit).
 */
import { createConnection } from 'node:net';
import { startRedis, type RedisServer } from './redis-server.js';

/** A Redis URL to use, and the private server behind it when one had to be started. */
export interface LocalRedis {
  url: string;
  started: RedisServer | null;
}

/** True when something at `url` answers PING within `timeoutMs`. */
export function answersPing(url: string, timeoutMs = 500): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = createConnection({ host: hostname || '127.0.0.1', port: Number(port || 6379) });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    // A server that wants a password answers -NOAUTH: it is there, and the URL must carry the password.
    socket.on('data', (chunk) => done(/^(\+PONG|-NOAUTH)/.test(chunk.toString())));
  });
}

/** REDIS_URL if set (it must answer), else the default local Redis, else a private one. */
export async function findOrStartRedis(log: (line: string) => void = () => {}): Promise<LocalRedis> {
  const configured = process.env['REDIS_URL'];
  if (configured) {
    if (!(await answersPing(configured, 2_000))) {
      throw new Error(`REDIS_URL=${configured} does not answer; start that server or unset REDIS_URL`);
    }
    return { url: configured, started: null };
  }
  const fallback = 'redis://127.0.0.1:6379';
  if (await answersPing(fallback)) return { url: fallback, started: null };
  log('no Redis on 127.0.0.1:6379; starting a private redis-server for this run');
  try {
    const started = await startRedis();
    return { url: started.url, started };
  } catch (err) {
    throw new Error(
      `could not start redis-server (${err instanceof Error ? err.message : String(err)}). ` +
        'Install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_URL',
    );
  }
}
