/**
 * OpenTelemetry (issue 6, item 3): the W3C trace context travels in the job's record (header
 * field R), add runs in a producer span and the handler in a consumer span that continues the
 * producer's trace, so user spans in a handler land in the trace of the request that scheduled the
 * job.
 *
 * The first test runs before any tracer provider is registered: the API is installed but does
 * nothing, and no traceparent is written.
 */
import { readFileSync } from 'node:fs';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { decodeRecord } from '../../src/record/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const packageVersion = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
const exporter = new InMemorySpanExporter();
let provider: NodeTracerProvider | undefined;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
  exporter.reset();
});
afterAll(async () => {
  await provider?.shutdown();
  trace.disable();
  context.disable();
});

function open<T>(name: string, handler: (job: { id: string; payload: T; attempt: number }) => Promise<void>) {
  const queue = new Queue<T>(name, { connection: redis.url() });
  const worker = new Worker<T>(name, handler, {
    connection: redis.url(),
    backoff: { type: 'fixed', delay: 10 },
  });
  closers.push(
    () => worker.close({ timeoutMs: 1_000 }),
    () => queue.close(),
  );
  return { queue, worker };
}

/** The traceparent stored in the job's record header, read straight from Redis. */
async function storedTraceparent(name: string, id: string): Promise<string | undefined> {
  const r = new Redis(redis.url());
  try {
    const raw = await r.hgetBuffer(queueKeys(name).records, id);
    if (!raw) throw new Error(`job ${id} is not in Redis`);
    return decodeRecord(raw).header.traceparent;
  } finally {
    r.disconnect();
  }
}

const spans = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);

describe('tracing with @opentelemetry/api', () => {
  it('without a registered tracer provider writes no traceparent and runs jobs as usual', async () => {
    const name = uniqueQueue('untraced');
    const ran: string[] = [];
    const { queue } = open<string>(name, async (job) => void ran.push(job.payload));
    const { id } = await queue.add('x', { delay: '1h' });
    expect(await storedTraceparent(name, id)).toBeUndefined();
    await queue.add('y');
    await waitFor(() => ran.length === 1, { what: 'the untraced job' });
    expect(ran).toEqual(['y']);
  });

  it('a job run continues the trace that scheduled it: request > send > process > handler span', async () => {
    provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register();
    const app = trace.getTracer('app');
    const name = uniqueQueue('traced');
    let handlerTrace: string | undefined;
    const { queue } = open<string>(name, async () => {
      // A span the user starts in the handler is a child of delayq's process span.
      app.startActiveSpan('handler work', (span) => {
        handlerTrace = trace.getActiveSpan()?.spanContext().traceId;
        span.end();
      });
    });

    const { id, stored } = await app.startActiveSpan('request', async (request) => {
      const added = await queue.add('hello', { delay: 300 });
      // Read while it waits: once it has run, only its completed record (no header fields) is left.
      const tp = await storedTraceparent(name, added.id);
      request.end();
      return { id: added.id, stored: tp };
    });
    await waitFor(() => spans('handler work').length === 1, { what: 'the handler span' });

    const [request] = spans('request');
    const [send] = spans(`send ${name}`);
    const [process] = spans(`process ${name}`);
    const [work] = spans('handler work');
    const traceId = request!.spanContext().traceId;
    expect(send!.kind).toBe(SpanKind.PRODUCER);
    expect(send!.instrumentationScope).toMatchObject({ name: 'delayq', version: packageVersion });
    expect(send!.parentSpanContext?.spanId).toBe(request!.spanContext().spanId);
    expect(send!.attributes).toMatchObject({
      'messaging.system': 'delayq',
      'messaging.destination.name': name,
      'messaging.operation.type': 'send',
      'messaging.message.id': id,
    });
    expect(stored).toBe(`00-${traceId}-${send!.spanContext().spanId}-01`);

    expect(process!.kind).toBe(SpanKind.CONSUMER);
    expect(process!.spanContext().traceId).toBe(traceId);
    expect(process!.parentSpanContext?.spanId).toBe(send!.spanContext().spanId);
    expect(process!.attributes).toMatchObject({
      'messaging.operation.type': 'process',
      'messaging.message.id': id,
      'delayq.job.attempt': 1,
    });
    expect(process!.attributes['delayq.job.lateness_ms']).toBeGreaterThanOrEqual(0);
    expect(process!.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(work!.parentSpanContext?.spanId).toBe(process!.spanContext().spanId);
    expect(handlerTrace).toBe(traceId);
  });

  it('a failed attempt marks its process span as an error; the retry is another span of the same trace', async () => {
    const name = uniqueQueue('failing');
    const { queue } = open<number>(name, async (job) => {
      if (job.attempt === 1) throw new Error('first attempt fails');
    });
    const [a, b] = await queue.addBulk([{ payload: 1 }, { payload: 2 }]);
    await waitFor(() => spans(`process ${name}`).length === 4, { what: 'four process spans' });

    const [send] = spans(`send ${name}`);
    expect(send!.attributes['messaging.batch.message_count']).toBe(2);
    const runs = spans(`process ${name}`);
    for (const run of runs) {
      expect(run.spanContext().traceId).toBe(send!.spanContext().traceId);
      expect(run.parentSpanContext?.spanId).toBe(send!.spanContext().spanId);
    }
    for (const id of [a!.id, b!.id]) {
      const mine = runs.filter((r) => r.attributes['messaging.message.id'] === id);
      const byAttempt = new Map(mine.map((r) => [r.attributes['delayq.job.attempt'], r]));
      expect(byAttempt.get(1)?.status).toEqual({
        code: SpanStatusCode.ERROR,
        message: 'first attempt fails',
      });
      expect(byAttempt.get(1)?.events.map((e) => e.name)).toEqual(['exception']);
      expect(byAttempt.get(2)?.status.code).not.toBe(SpanStatusCode.ERROR);
    }
  });
});
