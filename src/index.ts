// Public exports only.
export { Queue, DeadLetters, QueueGroups } from './queue.js';
export type {
  QueueOptions,
  AddResult,
  BulkJob,
  JobInfo,
  GroupInfo,
  ConfigureOptions,
  SearchOptions,
  SearchPage,
  PartitionStatus,
  RepartitionStatus,
} from './queue.js';
export type { JobLogLine } from './operations/log.js';
export type { FlowJob, FlowJobOptions, FlowResult, OnChildFailure } from './queue/flow.js';
export { MAX_FLOW_JOBS, MAX_FLOW_CHILDREN, MAX_FLOW_LEVELS } from './queue/flow.js';
export { Worker } from './worker.js';
export type { Handler, BatchHandler, WorkerEvents } from './worker.js';
export type { WorkerOptions, BatchWorkerOptions, Migrations } from './worker/options.js';
export type { Logger } from './worker/logger.js';
export type { BatchOptions } from './worker/batch-options.js';
export type { BatchJob } from './worker/batch-job.js';
export type { Job } from './job.js';
export type { AddOptions, OnExists } from './job-options.js';
export type { Backoff, BackoffSpec, BackoffFunction } from './backoff.js';
export type { Duration } from './duration.js';
export type { Codec, Envelope, EnvelopeCodec } from './codec/codec.js';
export type { CodecOption } from './codec/payload.js';
export { jsonCodec } from './codec/json.js';
export { msgpackCodec } from './codec/msgpack.js';
export { protobufCodec } from './codec/protobuf.js';
export type { ProtobufCodec } from './codec/protobuf.js';
export type { ConnectionOption, ClusterConnectionOptions, RedisClient } from './redis/connection.js';
export type { Strategy, StrategyOption } from './redis/capabilities.js';
export type { Counts } from './operations/counts.js';
export type { ListState } from './operations/list.js';
export type { JobState, JobInfoState } from './operations/raw-job.js';
export type { EventsReadOptions } from './queue/events-reader.js';
export type { GroupsOption } from './definition/definition.js';
export type { StandardSchemaV1 } from './schema.js';
export type { RecordedError } from './operations/fail.js';
export {
  DelayqError,
  ValidationError,
  PayloadTooLargeError,
  EncodeError,
  DecodeError,
  LeaseLostError,
  UnsupportedVersionError,
  ConnectionError,
  UnsupportedServerError,
  ClosedError,
  DurabilityError,
  JobTimeoutError,
  LayoutMismatchError,
  PartitionMismatchError,
  RepartitionRefusedError,
  ConfigMismatchError,
  UnknownQueueError,
  UnsupportedLayoutError,
  CodecUnavailableError,
  UnrecoverableError,
  CancelledError,
  ProgressTooLargeError,
  LogLimitError,
  FlowExistsError,
  FlowQueueError,
} from './errors.js';
export { SnoozeError } from './snooze.js';
export type { EventsOption, JobEvent, JobEventType } from './events.js';
export { Scheduler } from './scheduler.js';
export type { SchedulerOptions, SchedulerEvents, SchedulerStats } from './scheduler.js';
export type {
  ScheduleResult,
  UpsertStatus,
  ScheduleInfo,
  ScheduleOptions,
  MissedPolicy,
  ScheduleSpec,
  ResolvedSpec,
  AddedOccurrence,
} from './schedule/index.js';
