/** The delayq dashboard: a node:http handler to mount, or a server to run. */
export { createDashboard } from './handler.js';
export type { Dashboard, DashboardOptions } from './handler.js';
export { startDashboard } from './server.js';
export { DashboardConfigError } from './security.js';
export type { DashboardServer, DashboardServerOptions } from './server.js';
