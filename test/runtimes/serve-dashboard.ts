/**
 * The dashboard's `.fetch` served by the runtime's own server: Bun.serve under Bun, Deno.serve under
 * Deno. Run by test/dashboard/mounts.test.ts (from src/) and by scripts/runtimes.ts (Bun and
 * Deno, from the built dist/ given as DELAYQ_ROOT). Paths outside BASE_PATH answer 'app', as the
 * user's own routes would. Prints `ready {"pid","workerId","port"}` once it listens; SIGTERM stops it.
 */
import process from 'node:process';

type Load = typeof import('../../src/dashboard/index.js');
interface Served {
  port: number;
  stop(): Promise<void>;
}
type FetchHandler = (request: Request) => Response | Promise<Response>;
interface Runtimes {
  Bun?: {
    serve(options: { port: number; hostname: string; fetch: FetchHandler }): {
      port: number;
      stop(force?: boolean): Promise<void> | void;
    };
  };
  Deno?: {
    serve(
      options: { port: number; hostname: string; onListen(addr: { port: number }): void },
      handler: FetchHandler,
    ): { shutdown(): Promise<void> };
  };
}

const root = process.env['DELAYQ_ROOT'] ?? '../../src/';
const { createDashboard } = (await import(`${root}dashboard/index.js`)) as Load;
const base = process.env['BASE_PATH'] ?? '';
const token = process.env['DASHBOARD_TOKEN'];
const dashboard = createDashboard({
  connection: process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379',
  basePath: base,
  ...(token ? { token } : {}),
});

const handle: FetchHandler = (request) => {
  const path = new URL(request.url).pathname;
  if (path === base || path.startsWith(`${base}/`)) return dashboard.fetch(request);
  return new Response('app');
};

const runtimes = globalThis as unknown as Runtimes;
let served: Served;
if (runtimes.Bun) {
  const server = runtimes.Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: handle });
  served = { port: server.port, stop: async () => void (await server.stop(true)) };
} else if (runtimes.Deno) {
  const deno = runtimes.Deno;
  let listening!: (port: number) => void;
  const port = new Promise<number>((resolve) => (listening = resolve));
  // onListen runs inside serve(), before serve() returns.
  const server = deno.serve(
    { port: 0, hostname: '127.0.0.1', onListen: ({ port: p }) => listening(p) },
    handle,
  );
  served = { port: await port, stop: () => server.shutdown() };
} else {
  throw new Error('run this under Bun or Deno');
}

process.once('SIGTERM', () => {
  void served
    .stop()
    .then(() => dashboard.close())
    .finally(() => process.exit(0));
});
const runtime = runtimes.Bun ? 'bun' : 'deno';
console.log(
  `ready ${JSON.stringify({ pid: process.pid, workerId: `${runtime}-dashboard`, port: served.port })}`,
);
