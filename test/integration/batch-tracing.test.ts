/**
 * OpenTelemetry for batch workers: the handler runs in one consumer span `process <queue>` with
 * the batch's size, linked to the producer span of each job (the jobs came from different traces,
 * so none is its parent); a span the handler starts is its child.
 */
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterAll, afterEach, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  exporter.reset();
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

const spans = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);

it('a batch runs in one process span linked to each job producer span; the handler span is its child', async () => {
  const name = uniqueQueue('batch-traced');
  const queue = new Queue<number>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  const app = trace.getTracer('app');
  // Two requests, two traces: each adds one job.
  const ids: string[] = [];
  for (const n of [1, 2]) {
    await app.startActiveSpan(`request ${n}`, async (span) => {
      ids.push((await queue.add(n)).id);
      span.end();
    });
  }
  const worker = new Worker<number>(
    name,
    async () => {
      app.startActiveSpan('batch work', (span) => span.end());
    },
    { connection: redis.url(), batch: { size: 2, waitMs: 60_000 } },
  );
  closers.push(() => worker.close({ timeoutMs: 1_000 }));
  await waitFor(() => spans('batch work').length === 1, { what: 'the handler span' });

  const sends = spans(`send ${name}`);
  const [process] = spans(`process ${name}`);
  const [work] = spans('batch work');
  expect(sends).toHaveLength(2);
  expect(spans(`process ${name}`)).toHaveLength(1);
  expect(process!.kind).toBe(SpanKind.CONSUMER);
  expect(process!.attributes).toMatchObject({
    'messaging.operation.type': 'process',
    'messaging.destination.name': name,
    'messaging.batch.message_count': 2,
  });
  // No parent: it links to both traces instead.
  expect(process!.parentSpanContext).toBeUndefined();
  expect(
    process!.links
      .map((l) => [l.context.traceId, l.context.spanId, l.attributes?.['messaging.message.id']])
      .sort(),
  ).toEqual(sends.map((s, i) => [s.spanContext().traceId, s.spanContext().spanId, ids[i]]).sort());
  expect(process!.status.code).not.toBe(SpanStatusCode.ERROR);
  expect(work!.parentSpanContext?.spanId).toBe(process!.spanContext().spanId);
});
