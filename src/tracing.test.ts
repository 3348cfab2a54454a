import { context, trace } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterEach, expect, it } from 'vitest';
import { loadTracing } from './tracing.js';

afterEach(() => {
  trace.disable();
  context.disable();
});

it('observed(): true while a tracer provider or a context manager is registered, asked anew each time', async () => {
  trace.disable();
  context.disable();
  const tracing = await loadTracing();
  if (!tracing) throw new Error('@opentelemetry/api is a dev dependency: tracing must load');
  expect(tracing.observed()).toBe(false);
  trace.setGlobalTracerProvider(new NodeTracerProvider());
  expect(tracing.observed()).toBe(true);
  trace.disable();
  expect(tracing.observed()).toBe(false);
  // register() sets a context manager too; without the provider, a handler still sees the producer's trace.
  new NodeTracerProvider().register();
  trace.disable();
  expect(tracing.observed()).toBe(true);
  context.disable();
  expect(tracing.observed()).toBe(false);
});
