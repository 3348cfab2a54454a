/**
 * OpenTelemetry spans for add and process, when the application has `@opentelemetry/api`
 * installed (an optional peer dependency): delayq never requires it, and without a registered
 * tracer provider the API hands out non-recording spans, so this costs next to nothing.
 *
 * The link between the two sides is the W3C `traceparent` carried in the job's envelope: add
 * writes the context of its span there, and the worker's process span continues that trace, so a
 * request that scheduled a job and the job's run, hours later, show up as one trace.
 *
 * Span names and attributes follow the OpenTelemetry messaging conventions (`send <queue>`,
 * `process <queue>`, `messaging.*`).
 */
import { createRequire } from 'node:module';
import type * as Otel from '@opentelemetry/api';

type OtelApi = typeof Otel;

/** What the worker knows about the job it is about to run. */
export interface ProcessSpanInfo {
  queue: string;
  id: string;
  attempt: number;
  runAt: number;
  claimedAt: number;
  traceparent: string | undefined;
}

/** The tracing seam of Queue and Worker; null when @opentelemetry/api is not installed. */
export interface Tracing {
  /**
   * Run `send` inside a producer span for adding `count` jobs to `queue`; `send` gets the
   * traceparent to write into each envelope (undefined when no provider is set).
   */
  send<R extends ReadonlyArray<{ id: string }>>(
    queue: string,
    count: number,
    send: (traceparent: string | undefined) => Promise<R>,
  ): Promise<R>;
  /**
   * Whether a span made now would be recorded or seen: a tracer provider is registered, or a
   * context manager would hand the span (and the producer's trace) to the handler. Asked per job,
   * as an application may register either later. When neither, the worker runs a handler without
   * a span: one that nothing records or sees cost ~1.4 KB of garbage per job.
   */
  observed(): boolean;
  /** Run the handler inside a consumer span that continues the producer's trace. */
  process<R>(info: ProcessSpanInfo, run: () => Promise<R>): Promise<R>;
  /**
   * Run a batch handler inside one consumer span, linked to each job's producer span: the jobs
   * came from many traces, so none is the parent (the messaging conventions' batch processing).
   */
  processBatch<R>(
    queue: string,
    jobs: ReadonlyArray<Omit<ProcessSpanInfo, 'queue'>>,
    run: () => Promise<R>,
  ): Promise<R>;
}

/** The instrumentation scope: this package, at the version in its package.json (same path from src/ and dist/). */
function scope(): { name: string; version: string } {
  const pkg = createRequire(import.meta.url)('../package.json') as { name: string; version: string };
  return { name: pkg.name, version: pkg.version };
}
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

let loading: Promise<Tracing | null> | undefined;

/**
 * The tracing seam, loaded once per process. The import is dynamic so that delayq runs (and
 * bundles) without @opentelemetry/api; a failed import means "not installed", never an error.
 */
export function loadTracing(): Promise<Tracing | null> {
  loading ??= import('@opentelemetry/api').then(
    (api: OtelApi) => otelTracing(api),
    () => null,
  );
  return loading;
}

function otelTracing(api: OtelApi): Tracing {
  const { name, version } = scope();
  const tracer = (): Otel.Tracer => api.trace.getTracer(name, version);
  // A context made once: only a registered context manager makes it the active one inside with().
  const probe = api.ROOT_CONTEXT.setValue(api.createContextKey('delayq tracing probe'), true);
  const probeActive = (): boolean => api.context.active() === probe;
  const ended = <R>(span: Otel.Span, run: Promise<R>): Promise<R> =>
    run.then(
      (value) => {
        span.end();
        return value;
      },
      (err: unknown) => {
        span.recordException(err instanceof Error ? err : String(err));
        span.setStatus({
          code: api.SpanStatusCode.ERROR,
          message: err instanceof Error ? err.message : String(err),
        });
        span.end();
        throw err;
      },
    );

  return {
    observed() {
      const provider = api.trace.getTracerProvider();
      // Another copy of the API may have registered its own proxy: assume that one records.
      if (!(provider instanceof api.ProxyTracerProvider)) return true;
      return provider.getDelegateTracer(name, version) !== undefined || api.context.with(probe, probeActive);
    },

    send(queue, count, send) {
      const attributes: Otel.Attributes = {
        'messaging.system': 'delayq',
        'messaging.destination.name': queue,
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'add',
      };
      if (count !== 1) attributes['messaging.batch.message_count'] = count;
      const span = tracer().startSpan(`send ${queue}`, { kind: api.SpanKind.PRODUCER, attributes });
      const traceparent = format(span.spanContext(), api);
      const sent = api.context.with(api.trace.setSpan(api.context.active(), span), () => send(traceparent));
      // A generated id is known only once the add has run.
      return ended(
        span,
        sent.then((results) => {
          if (results.length === 1) span.setAttribute('messaging.message.id', results[0]!.id);
          return results;
        }),
      );
    },

    process(info, run) {
      const remote = parse(info.traceparent, api);
      // The producer's context is the parent: the run belongs to the trace that scheduled it. Without
      // one, the span starts a trace of its own rather than joining whatever happens to be active.
      const parent = remote ? api.trace.setSpanContext(api.ROOT_CONTEXT, remote) : api.ROOT_CONTEXT;
      const span = tracer().startSpan(
        `process ${info.queue}`,
        {
          kind: api.SpanKind.CONSUMER,
          attributes: {
            'messaging.system': 'delayq',
            'messaging.destination.name': info.queue,
            'messaging.operation.type': 'process',
            'messaging.operation.name': 'process',
            'messaging.message.id': info.id,
            'delayq.job.attempt': info.attempt,
            'delayq.job.run_at': info.runAt,
            // Start minus due by the Redis clock: how late the job started.
            'delayq.job.lateness_ms': info.claimedAt - info.runAt,
          },
        },
        parent,
      );
      return ended(span, api.context.with(api.trace.setSpan(parent, span), run));
    },

    processBatch(queue, jobs, run) {
      const links = jobs.flatMap((job): Otel.Link[] => {
        const remote = parse(job.traceparent, api);
        return remote ? [{ context: remote, attributes: { 'messaging.message.id': job.id } }] : [];
      });
      const span = tracer().startSpan(
        `process ${queue}`,
        {
          kind: api.SpanKind.CONSUMER,
          links,
          attributes: {
            'messaging.system': 'delayq',
            'messaging.destination.name': queue,
            'messaging.operation.type': 'process',
            'messaging.operation.name': 'process',
            'messaging.batch.message_count': jobs.length,
          },
        },
        api.ROOT_CONTEXT,
      );
      return ended(span, api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, span), run));
    },
  };
}

/** The W3C traceparent of a span context, or undefined when it is invalid (no provider). */
function format(sc: Otel.SpanContext, api: OtelApi): string | undefined {
  if (!api.isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** A remote span context from a traceparent, or undefined when absent or malformed. */
function parse(traceparent: string | undefined, api: OtelApi): Otel.SpanContext | undefined {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (!match) return undefined;
  const sc: Otel.SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: parseInt(match[3]!, 16),
    isRemote: true,
  };
  return api.isSpanContextValid(sc) ? sc : undefined;
}
