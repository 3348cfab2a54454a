// The schedule module's public surface (re-exported by the package entry).
export { Scheduler } from './scheduler.js';
export type { SchedulerOptions, SchedulerEvents, SchedulerStats } from './scheduler.js';
export type { ScheduleResult, ScheduleInfo } from './api.js';
export type { UpsertStatus } from './upsert.js';
export type { ScheduleOptions, MissedPolicy } from './definition.js';
export type { ScheduleSpec, ResolvedSpec } from './spec.js';
export type { AddedOccurrence } from './tick.js';
