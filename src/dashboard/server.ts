/**
 * Runs the dashboard on its own node:http server. It refuses to listen beyond loopback without a
 * token, because the dashboard shows payloads and, with a token, changes jobs.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDashboard, type DashboardOptions } from './handler.js';
import { checkToken, DashboardConfigError, isLoopbackHost } from './security.js';

/** Options of startDashboard. */
export interface DashboardServerOptions extends DashboardOptions {
  /** Interface to listen on. Default 127.0.0.1. Anything else needs a token. */
  host?: string;
  /** Port; 0 picks a free one. Default 4600. */
  port?: number;
}

/** A running dashboard server. */
export interface DashboardServer {
  readonly server: Server;
  readonly port: number;
  /** The address to open, e.g. http://127.0.0.1:4600/ */
  readonly url: string;
  /**
   * The address with the token in its fragment (`#token=`), which signs a browser in (the page
   * posts it; a fragment is never sent to a server, so no request log holds it); equal to url
   * without a token.
   */
  readonly loginUrl: string;
  /** Stop listening, drop open connections, close the dashboard's Redis use. */
  close(): Promise<void>;
}

/** Thrown for a configuration the dashboard refuses to run with. */

/** Start the dashboard; resolves once it listens. */
export async function startDashboard(options: DashboardServerOptions = {}): Promise<DashboardServer> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 4600;
  if (!isLoopbackHost(host) && !options.token) {
    throw new DashboardConfigError(
      `refusing to listen on ${host} without a token: pass --token or set DELAYQ_DASHBOARD_TOKEN (or listen on 127.0.0.1)`,
    );
  }
  checkToken(options.token);
  // host and port are this server's own: createDashboard refuses keys it does not know.
  const dashboardOptions: DashboardOptions & { host?: string; port?: number } = { ...options };
  delete dashboardOptions.host;
  delete dashboardOptions.port;
  const dashboard = createDashboard(dashboardOptions);
  const server = createServer((req, res) => dashboard.handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const actual = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const base = (options.basePath ?? '').replace(/\/+$/, '');
  const url = `http://${shown}:${actual}${base}/`;
  return {
    server,
    port: actual,
    url,
    loginUrl: options.token ? `${url}#token=${encodeURIComponent(options.token)}` : url,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await dashboard.close();
    },
  };
}
