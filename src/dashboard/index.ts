/** The delayq dashboard: a node:http handler to mount, or a server to run. */
export { createDashboard } from './handler.js';
export type { Dashboard, DashboardOptions } from './handler.js';
export { startDashboard, DashboardConfigError } from './server.js';
export type { DashboardServer, DashboardServerOptions } from './server.js';
