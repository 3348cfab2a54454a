// The schedule module's public surface (re-exported by the package entry; the Scheduler, which
// takes a Queue, is src/scheduler.ts, above both).
export type { ScheduleResult, ScheduleInfo } from './api.js';
export type { UpsertStatus } from '../operations/schedule-upsert.js';
export type { ScheduleOptions, MissedPolicy } from './definition.js';
export type { ScheduleSpec, ResolvedSpec } from './spec.js';
export type { AddedOccurrence } from './tick.js';
