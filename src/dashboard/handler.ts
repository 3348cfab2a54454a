/**
 * The dashboard in any server: `createDashboard(opts).handler` for node:http (Express, Fastify,
 * Connect) and `.fetch` for the Fetch API (Hono, Bun.serve, Deno.serve, Next.js route handlers),
 * both answered by one core; or let startDashboard() run a server. Pages are static shells; data
 * comes from a small JSON API (api.ts) that reads Redis with ZRANGE/ZCOUNT/SCAN only, and actions
 * (actions.ts) run only behind a token. This core holds the gates every request passes: host,
 * token, read-only, cross-site.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DelayqMetrics } from '../metrics/metrics.js';
import { exposition } from '../metrics/serve.js';
import type { Codec } from '../codec/codec.js';
import type { RedisClient } from '../redis/connection.js';
import { assertKnownOptions } from '../option-names.js';
import { act } from './actions.js';
import { readApi } from './api.js';
import { asset } from './assets.js';
import { queuePage, queuesPage, signInPage, type PageBoot } from './page.js';
import { dashboardPath, decodeSegment, pathUnder } from './paths.js';
import { DashboardQueues } from './queues.js';
import { html, json, NOT_FOUND, signedIn } from './replies.js';
import {
  checkToken,
  crossSiteProblem,
  hostOf,
  isLoopbackHost,
  SECURITY_HEADERS,
  TokenAuth,
} from './security.js';
import {
  fromFetch,
  fromNode,
  HttpError,
  MAX_BODY_BYTES,
  toFetch,
  toNode,
  type DashboardRequest,
  type Reply,
} from './exchange.js';

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

/** Build the dashboard handler. Nothing connects until the first request. */
export function createDashboard(options: DashboardOptions = {}): Dashboard {
  assertKnownOptions(options, DASHBOARD_OPTIONS, 'dashboard option');
  checkToken(options.token);
  const base = (options.basePath ?? '').replace(/\/+$/, '');
  const auth = options.token ? new TokenAuth(options.token) : null;
  const readOnly = options.readOnly ?? false;
  const allowedHosts = new Set((options.allowedHosts ?? []).map((h) => h.toLowerCase()));
  const codecs: readonly Codec[] =
    options.codec === undefined
      ? []
      : Array.isArray(options.codec)
        ? options.codec
        : [options.codec as Codec];
  const queues = new DashboardQueues(options.connection, options.queues, codecs);
  const metrics = options.metrics;

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
      return act(queues, req, path);
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
    const m = /^\/queues\/([^/]+)$/.exec(path);
    if (m) {
      const name = decodeSegment(m[1]!);
      await queues.get(name);
      return html(200, queuePage(boot(name)));
    }
    if (path.startsWith('/api/')) return json(200, await readApi(queues, path, url.searchParams));
    throw new HttpError(404, 'not found');
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
    close: () => queues.close(),
  };
}

function mountMismatch(mountedAt: string, base: string): Reply {
  const reply = json(500, {
    ok: false,
    error: `the dashboard is mounted at '${mountedAt}' but its basePath is '${base}': pass basePath: '${mountedAt}' to createDashboard()`,
  });
  return { ...reply, headers: { ...SECURITY_HEADERS, ...reply.headers } };
}
