/**
 * queue.addFlow(): a parent job and its children (and theirs) checked and encoded whole, then
 * written in one script call (add-flow.lua), so a flow is added whole or not at all
 * (docs/ARCHITECTURE.md §4.15).
 */
import { encodeJobPayload } from '../codec/payload.js';
import { describe } from '../duration.js';
import { FlowExistsError, FlowQueueError, ValidationError } from '../errors.js';
import { newJobId, resolveAddOptions, type AddOptions } from '../job-options.js';
import { assertKnownOptions } from '../option-names.js';
import { Cluster } from 'ioredis';
import { addFlow, type FlowInput, type FlowQueue } from '../operations/add-flow.js';
import { readFlowPeer } from '../operations/config-record.js';
import type { RedisClient } from '../redis/connection.js';
import { assertQueueName } from '../redis/keys.js';
import { UNKNOWN_GROUP_CONCURRENCY } from '../operations/waiting-keys.js';
import { encodeRecord } from '../record/index.js';
import { validatePayload } from '../schema.js';
import type { Producer } from '../definition/producer.js';
import { newJobHeader } from './new-job-record.js';

/** Most jobs one flow may hold, the root included. */
export const MAX_FLOW_JOBS = 1000;
/** Most children one parent may have. */
export const MAX_FLOW_CHILDREN = 500;
/** Most levels a flow may have: the root is level 1, its children level 2. */
export const MAX_FLOW_LEVELS = 8;

/** What a flow's parent does when a child dies or is cancelled. */
export type OnChildFailure = 'fail' | 'ignore';

/** A job's options in a flow: add's, but no `onExists` or `durability`, plus onChildFailure. */
export type FlowJobOptions = Omit<AddOptions, 'onExists' | 'durability'> & {
  /**
   * For a job with children: 'fail' (the default) makes it dead, naming the child, when a child
   * dies or is cancelled; 'ignore' lets it run when the others completed, without that child's
   * result.
   */
  onChildFailure?: OnChildFailure;
};

/** One job of a flow: its payload, options and children (each runs before it). */
export interface FlowJob<T> {
  payload: T;
  opts?: FlowJobOptions;
  children?: ReadonlyArray<FlowJob<T>>;
  /**
   * The queue a child runs in; absent: its parent's. Another queue than the flow's is for one Redis
   * only, and must be unpartitioned, not use the wheel strategy, and record the same codec
   * (FlowQueueError otherwise; README, "Flows").
   */
  queue?: string;
}

/** What addFlow resolves to: each job's id and due time, as the flow was given. */
export interface FlowResult {
  id: string;
  /** When the job is due: a parent runs at this time or when its last child completed, whichever is later. */
  runAt: Date;
  children: FlowResult[];
}

const FLOW_JOB_KEYS: ReadonlySet<string> = new Set(['payload', 'opts', 'children', 'queue']);
// A generated id taken this many times in a row means ids are not random: the add gives up.
const MAX_ID_DRAWS = 5;

/** A flow's job before it is encoded, in write order (a parent before its children). */
interface Node<T> {
  job: FlowJob<T>;
  /** The job's queue. */
  queue: string;
  parent: number;
  path: string;
  children: number[];
}

/** Add the flow `root` through `producer`; `calledAt` (performance.now()) is when addFlow was called. */
export async function writeFlow<T>(
  producer: Producer<T>,
  root: FlowJob<T>,
  calledAt: number,
): Promise<FlowResult> {
  const { context } = producer;
  producer.assertUnpartitioned('addFlow');
  const nodes = flatten(root, context.definition.name);
  const schema = producer.schema;
  if (schema) {
    await Promise.all(
      nodes.map((node) =>
        validatePayload(schema, node.job.payload).catch((err: unknown) => rethrow(err, node.path)),
      ),
    );
  }
  const codec = context.definition.codec ?? (await context.settle()).codec;
  const generated = new Set<number>();
  const inputs: FlowInput[] = nodes.map((node, i) => {
    try {
      const { onChildFailure, ...opts } = node.job.opts ?? {};
      if (onChildFailure !== undefined && onChildFailure !== 'fail' && onChildFailure !== 'ignore') {
        throw new ValidationError(
          `onChildFailure must be 'fail' or 'ignore', got ${describe(onChildFailure)}`,
          'onChildFailure',
        );
      }
      for (const key of ['onExists', 'durability'] as const) {
        if (key in opts) {
          throw new ValidationError(
            `${key} is not an option of a flow's job: a flow is added whole, once`,
            key,
          );
        }
      }
      const resolved = resolveAddOptions(opts, producer.jobDefaults);
      if (resolved.generated) generated.add(i);
      const payload = encodeJobPayload(codec, resolved.id, node.job.payload, producer.maxPayloadBytes);
      const header = {
        ...newJobHeader(resolved, context.definition.version, undefined),
        flow: true as const,
      };
      return {
        id: resolved.id,
        when: resolved.when,
        record: encodeRecord(header, payload),
        parent: node.parent,
        ignoreChildFailure: onChildFailure === 'ignore',
      };
    } catch (err) {
      return rethrow(err, node.path);
    }
  });
  const { eventsCap, strategy, record } = await context.settle();
  if (strategy === 'wheel') {
    throw new ValidationError(
      `addFlow is not supported with the wheel strategy (a parent waits outside its buckets); use the zpopmin or range strategy for flows`,
      'strategy',
    );
  }
  const groupConcurrency = record.groups?.concurrency ?? UNKNOWN_GROUP_CONCURRENCY;
  const queues: FlowQueue[] = [
    { name: context.name, keys: context.partitions[0]!, eventsCap, groupConcurrency },
    ...(await otherQueues(context.client, nodes, context.name, record.codec)),
  ];
  nodes.forEach((node, i) => {
    inputs[i]!.queue = queues.findIndex((queue) => queue.name === node.queue);
  });
  for (let draw = 1; ; draw++) {
    try {
      const dues = await addFlow(context.client, queues, inputs, calledAt);
      return result(nodes, inputs, dues, 0);
    } catch (err) {
      // A generated id that is taken (83 random bits, docs/ARCHITECTURE.md §3.3): drawn again.
      const taken = err instanceof FlowExistsError ? inputs.findIndex((input) => input.id === err.id) : -1;
      if (taken < 0 || !generated.has(taken) || draw >= MAX_ID_DRAWS) throw err;
      inputs[taken] = { ...inputs[taken]!, id: newJobId() };
    }
  }
}

/**
 * The queues other than the flow's own that its children name, in order, each checked: one Redis
 * (on Cluster two queues are two slots, which no one script can update together), recorded,
 * unpartitioned, not the wheel, and the codec of the flow's queue (the parent decodes its
 * children's results with its own). FlowQueueError otherwise, before anything is written.
 */
async function otherQueues<T>(
  client: RedisClient,
  nodes: ReadonlyArray<Node<T>>,
  own: string,
  codec: string,
): Promise<FlowQueue[]> {
  const names = [...new Set(nodes.map((node) => node.queue))].filter((name) => name !== own);
  const out: FlowQueue[] = [];
  for (const name of names) {
    if (client instanceof Cluster) {
      throw new FlowQueueError(
        name,
        'cluster',
        `on Redis Cluster two queues are two hash tags, in two slots that no one script can update together, so a child's end could not count for its parent exactly; keep a flow's children in its parent's queue there`,
      );
    }
    const peer = await readFlowPeer(client, name);
    if (!peer) {
      throw new FlowQueueError(
        name,
        'unknown',
        'no Queue or Worker has opened that queue yet, so its settings are not recorded; open it first',
      );
    }
    if (peer.partitions > 1) {
      throw new FlowQueueError(
        name,
        'partitioned',
        `it has ${peer.partitions} partitions; a flow's queues are unpartitioned`,
      );
    }
    if (peer.layout.startsWith('wheel')) {
      throw new FlowQueueError(name, 'wheel', 'it uses the wheel strategy, which keeps no flows');
    }
    if (peer.codec !== codec) {
      throw new FlowQueueError(
        name,
        'codec',
        `it records codec '${peer.codec}' and queue ${JSON.stringify(own)} '${codec}': a parent decodes its children's results with its own codec`,
      );
    }
    out.push(peer);
  }
  return out;
}

/** The flow's jobs in write order, checked for shape and bounds (ValidationError naming the job). */
function flatten<T>(root: FlowJob<T>, queue: string): Array<Node<T>> {
  const nodes: Array<Node<T>> = [];
  const visit = (job: FlowJob<T>, parent: number, path: string, level: number): void => {
    const given: unknown = job;
    if (typeof given !== 'object' || given === null || Array.isArray(given)) {
      throw new ValidationError(
        `${path}: a flow's job must be { payload, opts?, children? }, got ${describe(given)}`,
        path,
      );
    }
    assertKnownOptions(job, FLOW_JOB_KEYS, `${path} key`);
    const home = parent >= 0 ? nodes[parent]!.queue : queue;
    if (job.queue !== undefined) {
      try {
        assertQueueName(job.queue);
      } catch (err) {
        return rethrow(err, `${path}.queue`);
      }
    }
    if (parent < 0 && job.queue !== undefined && job.queue !== queue) {
      throw new ValidationError(
        `${path}: queue ${JSON.stringify(job.queue)}: the flow's root runs in the queue addFlow is called on (${JSON.stringify(queue)})`,
        `${path}.queue`,
      );
    }
    if (level > MAX_FLOW_LEVELS) {
      throw new ValidationError(`${path}: a flow may have at most ${MAX_FLOW_LEVELS} levels`, 'children');
    }
    const index = nodes.length;
    if (index >= MAX_FLOW_JOBS) {
      throw new ValidationError(
        `a flow may hold at most ${MAX_FLOW_JOBS} jobs, the parent included`,
        'children',
      );
    }
    const node: Node<T> = { job, queue: job.queue ?? home, parent, path, children: [] };
    nodes.push(node);
    if (parent >= 0) nodes[parent]!.children.push(index);
    const children: unknown = job.children;
    if (children === undefined) return;
    if (!Array.isArray(children)) {
      throw new ValidationError(
        `${path}.children must be an array, got ${describe(children)}`,
        `${path}.children`,
      );
    }
    if (children.length > MAX_FLOW_CHILDREN) {
      throw new ValidationError(
        `${path} has ${children.length} children; a parent may have at most ${MAX_FLOW_CHILDREN}`,
        `${path}.children`,
      );
    }
    (children as Array<FlowJob<T>>).forEach((child, i) =>
      visit(child, index, `${path}.children[${i}]`, level + 1),
    );
  };
  visit(root, -1, 'flow', 1);
  return nodes;
}

/** The result tree of node `i`. */
function result<T>(
  nodes: ReadonlyArray<Node<T>>,
  inputs: readonly FlowInput[],
  dues: readonly number[],
  i: number,
): FlowResult {
  return {
    id: inputs[i]!.id,
    runAt: new Date(dues[i]!),
    children: nodes[i]!.children.map((child) => result(nodes, inputs, dues, child)),
  };
}

function rethrow(err: unknown, path: string): never {
  if (err instanceof Error) err.message = `${path}: ${err.message}`;
  throw err;
}
