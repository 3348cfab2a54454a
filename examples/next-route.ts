/**
 * A Next.js route handler serving the dashboard: this file would be
 * app/admin/queues/[[...path]]/route.ts. examples/servers.ts calls its GET and POST as Next.js
 * would. In your project the import is `from 'delayq/dashboard'`.
 */
import { createDashboard } from '../src/dashboard/index.js';

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const DASHBOARD_TOKEN = process.env['DASHBOARD_TOKEN'] ?? '';

export const runtime = 'nodejs';
export const dashboard = createDashboard({
  connection: REDIS_URL,
  basePath: '/admin/queues',
  token: DASHBOARD_TOKEN,
});
export const GET = dashboard.fetch;
export const POST = dashboard.fetch;
