/** `delayq dashboard`: serve the dashboard (and /metrics) until Ctrl-C. */
import type { Command } from 'commander';
import { startDashboard } from '../dashboard/server.js';
import { connect, globalsOf, intArg, OperationalError, output, redisUrl, UsageError } from './context.js';
import { DashboardConfigError } from '../dashboard/security.js';
import { DelayqMetrics } from '../metrics/metrics.js';
import { discoverQueues } from '../inspect/discover.js';
import { Inspector } from '../inspect/inspector.js';
import { CODEC_HINT, loadCodecModule } from './codec-module.js';

interface DashboardFlags {
  port: number;
  host: string;
  token?: string;
  readOnly?: boolean;
  queues?: string;
  basePath?: string;
}

export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description('serve the web dashboard: counts, charts, job tables, inspector, actions (with a token)')
    .option('--port <port>', 'port (0: any free port)', intArg(0), 4600)
    .option('--host <host>', 'interface; beyond loopback a token is required', '127.0.0.1')
    .option('--token <token>', 'enables actions and protects every page (default DELAYQ_DASHBOARD_TOKEN)')
    .option('--read-only', 'hide and refuse every action')
    .option('--queues <names>', 'comma-separated queues to show (default: all found)')
    .option('--base-path <path>', "serve under this path, e.g. '/delayq'")
    .action(async (flags: DashboardFlags, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      const url = redisUrl(globals);
      const codecs = await loadCodecModule(globals.codecModule);
      // Fail now with one line if Redis is not there, rather than serve 503s.
      const client = await connect(url);
      const token = flags.token ?? process.env['DELAYQ_DASHBOARD_TOKEN'];
      const queueNames = flags.queues
        ?.split(',')
        .map((q) => q.trim())
        .filter(Boolean);
      const metrics = new DelayqMetrics();
      // The queues /metrics reports: those named, or, as the pages do, every queue found at each
      // scrape (so one created after the start shows at the next scrape). Each is opened once.
      const opened = new Map<string, Promise<Inspector | null>>();
      const openQueue = (name: string): Promise<Inspector | null> => {
        let inspector = opened.get(name);
        if (!inspector) {
          inspector = Inspector.open(client, name, {
            codecs,
            codecHint: CODEC_HINT,
            unknown: queueNames ? 'empty' : 'fail',
          }).catch(() => {
            // Not openable now (a layout-1 queue awaiting `delayq migrate`, or gone): left out,
            // and tried again at the next scrape.
            opened.delete(name);
            return null;
          });
          opened.set(name, inspector);
        }
        return inspector;
      };
      metrics.observeQueuesOf(async () => {
        const names = queueNames ?? (await discoverQueues(client, 1000));
        const found = await Promise.all(names.map(openQueue));
        return found.flatMap((inspector) => (inspector ? [inspector.queue] : []));
      });
      let server;
      try {
        server = await startDashboard({
          connection: client,
          host: flags.host,
          port: flags.port,
          ...(token !== undefined && token !== '' && { token }),
          ...(flags.readOnly === true && { readOnly: true }),
          ...(queueNames && { queues: queueNames }),
          ...(flags.basePath !== undefined && { basePath: flags.basePath }),
          ...(codecs.length > 0 && { codec: codecs }),
          metrics,
        });
      } catch (err) {
        await client.quit().catch(() => client.disconnect());
        if (err instanceof DashboardConfigError) throw new UsageError(err.message);
        const code = (err as NodeJS.ErrnoException).code;
        throw new OperationalError(
          `cannot listen on ${flags.host}:${flags.port}: ${code ?? (err as Error).message}`,
        );
      }
      out.data({
        url: server.url,
        port: server.port,
        actions: token !== undefined && flags.readOnly !== true,
      });
      out.line(`dashboard on ${out.c.bold(server.loginUrl)}`);
      if (!token)
        out.line(
          out.c.dim(
            'actions are off: pass --token (or DELAYQ_DASHBOARD_TOKEN) to retry, cancel and remove from the page',
          ),
        );
      out.line(out.c.dim('Ctrl-C stops it'));
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      await server.close();
      await Promise.all(
        [...opened.values()].map(async (pending) => {
          await (await pending)?.close();
        }),
      );
      await client.quit().catch(() => client.disconnect());
    });
}
