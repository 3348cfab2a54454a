/** Metrics for delayq: Prometheus exposition and the per-second activity the dashboard charts, both from Redis. */
export { DelayqMetrics, registerMetrics } from './metrics.js';
export { metricsFetch, metricsHandler } from './serve.js';
export type { MetricsOptions, ObservedQueue, QueueFinder } from './metrics.js';
export type { CounterName, CounterSnapshot, CounterValues } from '../operations/stats.js';
export { activitySeries } from './activity.js';
export type { ActivitySecond } from './activity.js';
