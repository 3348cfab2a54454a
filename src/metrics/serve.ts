/** Serving the metrics: their exposition text, and handlers for node:http and the Fetch API. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { DelayqMetrics } from './metrics.js';

/** The exposition text of `metrics` and the content type to serve it with. */
export async function exposition(
  metrics: DelayqMetrics | Registry,
): Promise<{ contentType: string; text: string }> {
  const registry = metrics instanceof DelayqMetrics ? metrics.registry : metrics;
  return { contentType: registry.contentType, text: await registry.metrics() };
}

/** A node:http handler answering with the exposition of `metrics` (a DelayqMetrics or any prom-client Registry). */
export function metricsHandler(
  metrics: DelayqMetrics | Registry,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    exposition(metrics).then(
      ({ contentType, text }) => {
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`);
      },
    );
  };
}

/** The same as metricsHandler() for the Fetch API (Hono, Bun.serve, Deno.serve, Next.js route handlers). */
export function metricsFetch(metrics: DelayqMetrics | Registry): (request: Request) => Promise<Response> {
  return async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return new Response('method not allowed\n', {
        status: 405,
        headers: { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' },
      });
    }
    try {
      const { contentType, text } = await exposition(metrics);
      return new Response(request.method === 'HEAD' ? null : text, {
        headers: { 'content-type': contentType, 'cache-control': 'no-store' },
      });
    } catch (err) {
      return new Response(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`, {
        status: 500,
        headers: { 'content-type': 'text/plain; charset=utf-8' },
      });
    }
  };
}
