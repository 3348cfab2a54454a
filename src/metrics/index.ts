/** Metrics for delayq: Prometheus exposition and the in-process activity the dashboard charts. */
export { DelayqMetrics, metricsFetch, metricsHandler, registerMetrics } from './metrics.js';
export type { MetricsOptions } from './metrics.js';
export { Activity } from './activity.js';
export type { ActivitySecond } from './activity.js';
