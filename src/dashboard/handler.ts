/**
 * The dashboard in any server: `createDashboard(opts).handler` for node:http (Express, Fastify,
 * Connect) and `.fetch` for the Fetch API (Hono, Bun.serve, Deno.serve, Next.js route handlers),
 * both answered by one core; or let startDashboard() run a server. Pages are static shells; data
 * comes from a small JSON API that reads Redis with ZRANGE/ZCOUNT/SCAN only.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import type { DelayqMetrics } from '../metrics/metrics.js';
import { exposition } from '../metrics/metrics.js';
import type { Codec } from '../codec/codec.js';
import { UnknownQueueError, ValidationError } from '../errors.js';
import { discoverQueues } from '../inspect/discover.js';
import { Inspector } from '../inspect/inspector.js';
import type { ListState } from '../operations/inspect.js';
import type { JobInfo } from '../queue.js';
import type { RedisClient } from '../redis/connection.js';
import { assertQueueName } from '../redis/keys.js';
import { assertKnownOptions } from '../option-names.js';
import { queuePage, queuesPage, signInPage, type PageBoot } from './page.js';
import { crossSiteProblem, hostOf, isLoopbackHost, SECURITY_HEADERS, TokenAuth } from './security.js';
import {
  fromFetch,
  fromNode,
  HttpError,
  toFetch,
  toNode,
  type DashboardRequest,
  type Reply,
} from './exchange.js';
import { toPlain } from './serialize.js';

/** Options of the dashboard handler. */
export interface DashboardOptions {
  /** A redis:// URL or an ioredis client (left open by close()). Default REDIS_URL or 127.0.0.1:6379. */
  connection?: string | RedisClient;
  /** Show only these queues. Default: every queue found with SCAN. */
  queues?: string[];
  /**
   * Enables the actions (retry, cancel, remove, retry all dead, pause and resume the queue). When set, every page and API call
   * needs it too: the sign-in form or a `#token=` sign-in link (set a session cookie; the token
   * never travels in an address a server logs) or `Authorization: Bearer <token>`.
   * Undefined counts as unset, so it can come straight from the environment.
   */
  token?: string | undefined;
  /** Hide and refuse every action. */
  readOnly?: boolean;
  /** Serve `/metrics` from these metrics. (The charts read the queues' counters in Redis, with or without.) */
  metrics?: DelayqMetrics;
  /**
   * The path the dashboard is mounted at, e.g. '/admin/queues'. Default ''. The node handler reads
   * Express's `req.originalUrl`, so `app.use('/admin/queues', handler)` works; `.fetch` also takes
   * a request whose prefix the framework already stripped (Hono's `app.mount`).
   */
  basePath?: string;
  /** Without a token, Host headers other than loopback names are refused (DNS rebinding). Add names here. */
  allowedHosts?: string[];
  /**
   * The codecs of queues whose recorded codec is not built in (protobuf, custom), found by the name
   * each declares. Without it such a queue's counts show, its payloads show the missing codec.
   */
  codec?: Codec | readonly Codec[];
}

/** A mounted dashboard. */
export interface Dashboard {
  /** node:http: handles requests under basePath; calls `next` (or answers 404) for any other path. */
  handler: (req: IncomingMessage, res: ServerResponse, next?: () => void) => void;
  /** Fetch API: the same dashboard, with the same checks, for a Request; never rejects. */
  fetch: (request: Request) => Promise<Response>;
  /** Close the Queues it opened and its Redis client if it created it. */
  close(): Promise<void>;
}

const STATES = [
  'scheduled',
  'active',
  'dead',
  'completed',
  'cancelled',
] as const satisfies readonly ListState[];
const MAX_PAGE = 100;
const MAX_BODY_BYTES = 16 * 1024;

const require = createRequire(import.meta.url);
const ASSETS: Record<string, { file: string; type: string }> = {
  'app.js': { file: new URL('./static/app.js', import.meta.url).pathname, type: 'text/javascript' },
  'app.css': { file: new URL('./static/app.css', import.meta.url).pathname, type: 'text/css' },
  'signin.js': { file: new URL('./static/signin.js', import.meta.url).pathname, type: 'text/javascript' },
  'uPlot.iife.min.js': { file: require.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript' },
  'uPlot.min.css': { file: require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css' },
};
const assetCache = new Map<string, Promise<Buffer>>();

/** Build the dashboard handler. Nothing connects until the first request. */
const DASHBOARD_OPTIONS: ReadonlySet<string> = new Set([
  'connection',
  'queues',
  'token',
  'readOnly',
  'metrics',
  'basePath',
  'allowedHosts',
  'codec',
] satisfies Array<keyof DashboardOptions>);

export function createDashboard(options: DashboardOptions = {}): Dashboard {
  assertKnownOptions(options, DASHBOARD_OPTIONS, 'dashboard option');
  const base = (options.basePath ?? '').replace(/\/+$/, '');
  const auth = options.token ? new TokenAuth(options.token) : null;
  const readOnly = options.readOnly ?? false;
  const fixed = options.queues ? new Set(options.queues) : null;
  options.queues?.forEach((name) => assertQueueName(name));
  const allowedHosts = new Set((options.allowedHosts ?? []).map((h) => h.toLowerCase()));
  const ownsClient = typeof options.connection !== 'object';
  let client: RedisClient | undefined =
    typeof options.connection === 'object' ? options.connection : undefined;
  // Opening a queue reads its config record, once; a failed read is not kept.
  const queues = new Map<string, Promise<Inspector>>();
  const codecs: readonly Codec[] =
    options.codec === undefined
      ? []
      : Array.isArray(options.codec)
        ? options.codec
        : [options.codec as Codec];
  const metrics = options.metrics;

  const redis = (): RedisClient => {
    if (!client) {
      const url =
        (options.connection as string | undefined) ?? process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
      client = new Redis(url, { maxRetriesPerRequest: 2 });
      client.on('error', () => {
        // Reported per request as a 503; ioredis reconnects by itself.
      });
    }
    return client;
  };
  const queueOf = async (name: string): Promise<Inspector> => {
    if (fixed && !fixed.has(name)) throw new HttpError(404, `no queue '${name}' on this dashboard`);
    try {
      assertQueueName(name);
    } catch (err) {
      throw new HttpError(400, (err as Error).message);
    }
    let queue = queues.get(name);
    if (!queue) {
      queue = Inspector.open(redis(), name, {
        codecs,
        codecHint:
          'give the dashboard that codec (createDashboard({ codec }), or delayq dashboard --codec-module)',
      }).catch((err: unknown) => {
        queues.delete(name);
        throw err instanceof UnknownQueueError ? new HttpError(404, err.message) : err;
      });
      queues.set(name, queue);
    }
    return queue;
  };

  async function route(req: DashboardRequest, path: string): Promise<Reply> {
    const { method, url } = req;
    if (!auth) {
      const host = hostOf(req.header('host')).toLowerCase();
      if (!isLoopbackHost(host) && !allowedHosts.has(host)) {
        throw new HttpError(
          403,
          `host '${host}' refused: without a token the dashboard answers loopback names only`,
        );
      }
    }
    if (path.startsWith('/assets/') && (method === 'GET' || method === 'HEAD')) return asset(path.slice(8));

    let via: 'bearer' | 'cookie' | null = null;
    if (auth) {
      if (path === '/session' && method === 'POST') return signIn(req);
      if (url.searchParams.has('token')) {
        // A token in the query is in every request log on its way: refused whatever its value,
        // so no link of that kind keeps working. Sign-in links carry it in the fragment.
        url.searchParams.delete('token');
        return html(400, signInPage(base, 'in-query', `${base}${path}${url.search}`));
      }
      via = auth.authOf(req);
      if (via === null) {
        if (path.startsWith('/api/') || path === '/metrics')
          throw new HttpError(401, 'sign in: send Authorization: Bearer <token>');
        return html(401, signInPage(base, null, `${base}${path}${url.search}`));
      }
    }
    const canAct = auth !== null && !readOnly;

    if (path === '/metrics') {
      if (!metrics) throw new HttpError(404, 'metrics are not enabled on this dashboard');
      const { contentType, text } = await exposition(metrics);
      return {
        status: 200,
        headers: { 'content-type': contentType, 'cache-control': 'no-store' },
        body: text,
      };
    }
    if (method === 'POST') {
      if (!auth)
        throw new HttpError(
          403,
          'actions are off: start the dashboard with a token (--token or DELAYQ_DASHBOARD_TOKEN)',
        );
      if (readOnly) throw new HttpError(403, 'this dashboard is read-only');
      if (via === 'cookie') {
        const problem = crossSiteProblem(req, auth.csrf);
        if (problem) throw new HttpError(403, `refused: ${problem}`);
      }
      return action(req, path);
    }
    if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, `${method} not allowed`);

    const boot = (queue: string | null): PageBoot => ({
      base,
      queue,
      canAct,
      readOnly,
      csrf: canAct && auth ? auth.csrf : '',
    });
    if (path === '/' || path === '') return html(200, queuesPage(boot(null)));
    let m = /^\/queues\/([^/]+)$/.exec(path);
    if (m) {
      const name = decode(m[1]!);
      await queueOf(name);
      return html(200, queuePage(boot(name)));
    }
    if (path === '/api/queues') return json(200, await listQueues());
    m = /^\/api\/queues\/([^/]+)$/.exec(path);
    if (m) return json(200, await overview(decode(m[1]!)));
    m = /^\/api\/queues\/([^/]+)\/jobs$/.exec(path);
    if (m) return json(200, await jobs(decode(m[1]!), url.searchParams));
    m = /^\/api\/queues\/([^/]+)\/groups$/.exec(path);
    if (m) return json(200, await groups(decode(m[1]!), url.searchParams));
    m = /^\/api\/queues\/([^/]+)\/jobs\/([^/]+)$/.exec(path);
    if (m) {
      const info = await (await queueOf(decode(m[1]!))).queue.get(decode(m[2]!));
      if (!info) throw new HttpError(404, `no job '${decode(m[2]!)}'`);
      return json(200, toPlain(info));
    }
    throw new HttpError(404, 'not found');
  }

  async function listQueues(): Promise<unknown> {
    const names = fixed ? [...fixed] : await discoverQueues(redis(), 1000);
    const rows = await Promise.all(
      names.map(async (name) => {
        // A queue the dashboard was told to show that nothing has opened yet: empty, not an error.
        const inspector = await queueOf(name).catch((err: unknown) => {
          if (err instanceof HttpError && err.status === 404) return null;
          throw err;
        });
        if (!inspector)
          return {
            name,
            counts: { scheduled: 0, due: 0, held: 0, active: 0, dead: 0 },
            strategy: null,
            paused: false,
          };
        const { scheduled, due, held, active, dead, paused } = await inspector.counts();
        const strategy = await inspector.strategy();
        return { name, counts: { scheduled, due, held, active, dead }, strategy, paused };
      }),
    );
    return { queues: rows };
  }

  async function overview(name: string): Promise<unknown> {
    const inspector = await queueOf(name);
    // The counts and the due chart from the same reads, so the page's figures agree.
    const { now, nextDue: next, paused, histogram: due, ...counts } = await inspector.figures();
    const [strategy, series] = await Promise.all([inspector.strategy(), inspector.activity(now, 300)]);
    const activity = {
      t: series.map((s) => s.t / 1000),
      completed: series.map((s) => s.completed),
      failed: series.map((s) => s.failed),
      dead: series.map((s) => s.dead),
      latenessAvg: series.map((s) => (s.latenessCount ? s.latenessSumMs / s.latenessCount : null)),
      latenessP99: series.map((s) => s.latenessP99Ms),
    };
    return { name, now, counts, nextDue: next, due, strategy, paused, activity };
  }

  async function jobs(name: string, params: URLSearchParams): Promise<unknown> {
    const state = params.get('state') ?? 'scheduled';
    if (!(STATES as readonly string[]).includes(state))
      throw new HttpError(400, `state must be one of ${STATES.join(', ')}`);
    const offset = Number(params.get('offset') ?? 0);
    const limit = Number(params.get('limit') ?? 20);
    if (!Number.isInteger(offset) || offset < 0)
      throw new HttpError(400, 'offset must be a whole number >= 0');
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
      throw new HttpError(400, `limit must be 1..${MAX_PAGE}`);
    const inspector = await queueOf(name);
    const [items, counts] = await Promise.all([
      inspector.list(state as ListState, { offset, limit }),
      inspector.counts(),
    ]);
    return { state, offset, limit, total: counts[state as ListState], items: items.map(summary) };
  }

  /** The groups panel: the top groups by backlog, and the recorded bounds (running / limit). */
  async function groups(name: string, params: URLSearchParams): Promise<unknown> {
    const offset = Number(params.get('offset') ?? 0);
    const limit = Number(params.get('limit') ?? 10);
    if (!Number.isInteger(offset) || offset < 0)
      throw new HttpError(400, 'offset must be a whole number >= 0');
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
      throw new HttpError(400, `limit must be 1..${MAX_PAGE}`);
    const { queue } = await queueOf(name);
    const [list, bounds] = await Promise.all([queue.groups.list({ offset, limit }), queue.groups.bounds()]);
    return { offset, limit, groups: list, bounds };
  }

  async function action(req: DashboardRequest, path: string): Promise<Reply> {
    await req.body(MAX_BODY_BYTES);
    const g = /^\/api\/queues\/([^/]+)\/groups\/([^/]+)\/(pause|resume)$/.exec(path);
    if (g) {
      const { queue } = await queueOf(decode(g[1]!));
      const group = decode(g[2]!);
      try {
        const changed = g[3] === 'pause' ? await queue.groups.pause(group) : await queue.groups.resume(group);
        return json(200, { ok: true, group, paused: g[3] === 'pause', changed });
      } catch (err) {
        if (err instanceof ValidationError) throw new HttpError(400, err.message);
        throw err;
      }
    }
    let m = /^\/api\/queues\/([^/]+)\/dead\/retry-all$/.exec(path);
    if (m) {
      const moved = await (await queueOf(decode(m[1]!))).queue.dead.retryAll();
      return json(200, { ok: true, moved });
    }
    m = /^\/api\/queues\/([^/]+)\/(pause|resume)$/.exec(path);
    if (m) {
      const { queue } = await queueOf(decode(m[1]!));
      if (m[2] === 'pause') await queue.pause();
      else await queue.resume();
      return json(200, { ok: true, paused: m[2] === 'pause' });
    }
    m = /^\/api\/queues\/([^/]+)\/jobs\/([^/]+)\/(retry|cancel|remove)$/.exec(path);
    if (!m) throw new HttpError(404, 'no such action');
    const { queue } = await queueOf(decode(m[1]!));
    const id = decode(m[2]!);
    switch (m[3]) {
      case 'retry': {
        const moved = await queue.dead.retry(id);
        if (moved === 0) throw new HttpError(409, `job '${id}' is not dead`);
        return json(200, { ok: true, moved });
      }
      case 'cancel': {
        if (!(await queue.cancel(id))) throw new HttpError(409, `job '${id}' is neither waiting nor running`);
        return json(200, { ok: true });
      }
      default: {
        // Remove deletes a dead job for good, or a waiting one (a cancel). A running job is left
        // alone (Cancel is the button for that); one that starts between the look and the cancel
        // is cancelled, which is what removing it meant.
        if (await queue.dead.remove(id)) return json(200, { ok: true });
        if ((await queue.get(id))?.state === 'scheduled' && (await queue.cancel(id)))
          return json(200, { ok: true });
        throw new HttpError(409, `job '${id}' is neither dead nor waiting`);
      }
    }
  }

  /** The sign-in form's POST: the token in the body, and the page to go back to. */
  async function signIn(req: DashboardRequest): Promise<Reply> {
    const form = new URLSearchParams(await req.body(MAX_BODY_BYTES));
    const next = dashboardPath(base, form.get('next'));
    if (!auth || !auth.matches(form.get('token'))) return html(401, signInPage(base, 'wrong', next));
    return signedIn(auth.cookie(base || '/', req.tls), next);
  }

  /** The one entry of both adapters: every reply, errors included, carries the security headers. */
  async function answer(req: DashboardRequest, path: string): Promise<Reply> {
    let reply: Reply;
    try {
      reply = await route(req, path);
    } catch (err) {
      const status = err instanceof HttpError ? err.status : 503;
      const message = err instanceof Error ? err.message : String(err);
      reply = json(status, { ok: false, error: status === 503 ? `redis: ${message}` : message });
    }
    return { ...reply, headers: { ...SECURITY_HEADERS, ...reply.headers } };
  }

  return {
    handler(req, res, next) {
      const request = fromNode(req);
      if (request.strippedPrefix !== '' && request.strippedPrefix !== base) {
        // Mounted at a path the dashboard was not told of: its links and cookie would point elsewhere.
        return toNode(res, mountMismatch(request.strippedPrefix, base));
      }
      const path = pathUnder(base, request.url.pathname);
      if (path === null) {
        if (next) return next();
        return toNode(res, NOT_FOUND);
      }
      void answer(request, path).then((reply) => toNode(res, reply));
    },
    async fetch(request) {
      const req = fromFetch(request);
      // A framework that mounts by stripping the prefix hands over the rest of the path only.
      const path = pathUnder(base, req.url.pathname) ?? req.url.pathname;
      return toFetch(await answer(req, path), req.method);
    },
    async close() {
      await Promise.all(
        [...queues.values()].map((q) =>
          q.then(
            (queue) => queue.close(),
            () => {},
          ),
        ),
      );
      queues.clear();
      if (client && ownsClient) {
        try {
          await client.quit();
        } catch {
          client.disconnect();
        }
      }
    },
  };
}

/** The table row of a job: what a list shows, with the payload cut short. */
function summary(info: JobInfo<unknown>): Record<string, unknown> {
  // A completed job shows its kept result where others show their payload.
  const shown = info.state === 'completed' ? info.result : info.payload;
  const final = info.state === 'completed' || info.state === 'cancelled';
  let preview =
    info.decodeError ?? (final && !('result' in info) ? '' : (JSON.stringify(toPlain(shown)) ?? ''));
  if (preview.length > 120) preview = `${preview.slice(0, 117)}…`;
  return {
    id: info.id,
    state: info.state,
    runAt: info.runAt.getTime(),
    attempts: info.attempts,
    maxAttempts: info.maxAttempts,
    priority: info.priority,
    group: info.group ?? null,
    preview,
    lastError: info.lastError ? { name: info.lastError.name, message: info.lastError.message } : null,
    lease: info.lease
      ? {
          workerId: info.lease.workerId,
          startedAt: info.lease.startedAt.getTime(),
          deadline: info.lease.deadline.getTime(),
        }
      : null,
    diedAt: info.diedAt?.getTime() ?? null,
    completedAt: info.completedAt?.getTime() ?? null,
    cancelledAt: info.cancelledAt?.getTime() ?? null,
    hasResult: 'result' in info,
    progress: 'progress' in info ? info.progress : null,
  };
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'malformed path');
  }
}

const NOT_FOUND: Reply = {
  status: 404,
  headers: { 'content-type': 'text/plain; charset=utf-8' },
  body: 'not found\n',
};

/** The path below `base` ('/' for base itself), or null when `pathname` is outside it. */
function pathUnder(base: string, pathname: string): string | null {
  if (!base) return pathname || '/';
  if (pathname !== base && !pathname.startsWith(`${base}/`)) return null;
  return pathname.slice(base.length) || '/';
}

function mountMismatch(mountedAt: string, base: string): Reply {
  const reply = json(500, {
    ok: false,
    error: `the dashboard is mounted at '${mountedAt}' but its basePath is '${base}': pass basePath: '${mountedAt}' to createDashboard()`,
  });
  return { ...reply, headers: { ...SECURITY_HEADERS, ...reply.headers } };
}

/**
 * `next` when it is a path of this dashboard (under `base`), else the dashboard's start page: a
 * sign-in never sends the browser to another site or another application's path.
 */
function dashboardPath(base: string, next: string | null): string {
  if (next === null || !next.startsWith('/') || next.startsWith('//') || /[\\\s]/.test(next))
    return `${base}/`;
  const path = next.split(/[?#]/)[0] ?? '';
  return pathUnder(base, path) === null ? `${base}/` : next;
}

function signedIn(cookie: string, location: string): Reply {
  return { status: 303, headers: { 'set-cookie': cookie, location } };
}

function html(status: number, body: string): Reply {
  return {
    status,
    headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
    body,
  };
}

function json(status: number, body: unknown): Reply {
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
    body: JSON.stringify(body),
  };
}

async function asset(name: string): Promise<Reply> {
  const entry = ASSETS[name];
  if (!entry) throw new HttpError(404, 'no such asset');
  let data = assetCache.get(name);
  if (!data) {
    data = readFile(entry.file);
    assetCache.set(name, data);
    data.catch(() => assetCache.delete(name));
  }
  return {
    status: 200,
    headers: { 'content-type': `${entry.type}; charset=utf-8`, 'cache-control': 'public, max-age=300' },
    body: await data,
  };
}
