/**
 * The dashboard's requests and replies, apart from any server: the core answers a DashboardRequest
 * with a Reply, and two thin adapters carry them over node:http (Express, Fastify, Connect) and over
 * the Fetch API (Hono, Bun.serve, Deno.serve, Next.js route handlers). Every security rule lives in
 * the core, so both ways in are held to the same checks.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** What the core reads from a request, whichever server received it. */
export interface DashboardRequest {
  /**
   * The prefix a framework stripped from the path before handing the request over (Express's
   * `app.use('/admin', ...)` -> '/admin'), when it says so; '' when it did not strip one.
   */
  strippedPrefix: string;
  method: string;
  /** The address as the client asked for it, mount prefix included where the server kept it. */
  url: URL;
  /** A header by lower-case name; one value (repeated headers joined by the server). */
  header(name: string): string | undefined;
  /** The body as text, refused past `limit` bytes. */
  body(limit: number): Promise<string>;
  /** The request came over TLS (the session cookie is then marked Secure). */
  tls: boolean;
}

/** A whole reply, built before anything is written, so a failure can still answer cleanly. */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

/** The most a request body may hold (a sign-in form, an action's empty body): a bound on what a client can make the core buffer. */
export const MAX_BODY_BYTES = 16 * 1024;

/** Thrown for a request that is answered with an HTTP error status and a message. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A node:http request as a DashboardRequest. Express and Connect strip the mount prefix from
 * `req.url` and keep the whole address in `req.originalUrl`: that one is read when present, so a
 * handler mounted with `app.use('/admin/queues', handler)` sees the basePath it was given.
 */
export function fromNode(req: IncomingMessage & { originalUrl?: string }): DashboardRequest {
  const raw = typeof req.originalUrl === 'string' ? req.originalUrl : (req.url ?? '/');
  const url = new URL(raw, 'http://dashboard.invalid');
  const rest = new URL(req.url ?? '/', 'http://dashboard.invalid').pathname;
  let stripped = '';
  if (url.pathname !== rest) {
    // '/admin/queues/api' handed over as '/api'; '/admin/queues' (no slash) as '/'.
    if (url.pathname.endsWith(rest)) stripped = url.pathname.slice(0, url.pathname.length - rest.length);
    else if (rest === '/') stripped = url.pathname;
  }
  return {
    strippedPrefix: stripped.replace(/\/+$/, ''),
    method: req.method ?? 'GET',
    url,
    header(name) {
      const value = req.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    body: (limit) => readNodeBody(req, limit),
    tls: 'encrypted' in req.socket && req.socket.encrypted === true,
  };
}

/** Write `reply` to a node:http response. */
export function toNode(res: ServerResponse, reply: Reply): void {
  res.writeHead(reply.status, reply.headers);
  res.end(reply.body);
}

/** A Fetch API Request as a DashboardRequest. */
export function fromFetch(request: Request): DashboardRequest {
  const url = new URL(request.url);
  return {
    strippedPrefix: '',
    method: request.method,
    url,
    header: (name) => request.headers.get(name) ?? (name === 'host' ? url.host : undefined),
    body: (limit) => readFetchBody(request, limit),
    tls: url.protocol === 'https:',
  };
}

/** `reply` as a Fetch API Response (no body for HEAD, as node:http does by itself). */
export function toFetch(reply: Reply, method: string): Response {
  const body = method === 'HEAD' || reply.body === undefined ? null : reply.body;
  return new Response(body, { status: reply.status, headers: reply.headers });
}

function readNodeBody(req: IncomingMessage & { body?: unknown }, limit: number): Promise<string> {
  // A body parser mounted before the dashboard (express.json(), express.urlencoded()) has read the
  // stream already: take what it parsed, since waiting for the stream's end would wait forever.
  if (req.readableEnded) return Promise.resolve(parsedBody(req.body));
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new HttpError(413, 'request body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parsedBody(body: unknown): string {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return Buffer.from(body).toString('utf8');
  if (typeof body !== 'object' || body === null) return '';
  // The sign-in form is the one body the dashboard reads by field; keep its fields as a form.
  const fields = Object.entries(body).filter(
    (entry): entry is [string, string] => typeof entry[1] === 'string',
  );
  return new URLSearchParams(fields).toString();
}

async function readFetchBody(request: Request, limit: number): Promise<string> {
  if (!request.body) return '';
  // Read chunk by chunk so an oversized body is refused without holding all of it.
  const reader = (request.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new HttpError(413, 'request body too large');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
