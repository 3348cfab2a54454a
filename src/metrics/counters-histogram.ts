/**
 * The lateness and run-time histograms of the Prometheus metrics: their buckets are counters kept
 * in Redis (stats.lua), not observations of this process, so they answer a scrape from the totals.
 */
import { Histogram, type Registry } from 'prom-client';
import type { CounterName, CounterValues } from '../operations/stats.js';

/** A histogram kept in the counters: cumulative buckets `<counter>:<le ms>`, `:+Inf` and `:sum` (ms). */
export interface CountersHistogramSpec {
  name: string;
  help: string;
  counter: 'lat' | 'run';
  boundsMs: readonly number[];
}

/**
 * A histogram whose buckets are counters kept in Redis (cumulative, as Prometheus wants them):
 * prom-client's Histogram only counts what it observed itself, so this one answers get() from the
 * totals instead. The lateness and the run-time histograms are two of these.
 */
export class CountersHistogram extends Histogram<'queue'> {
  constructor(
    private readonly spec: CountersHistogramSpec,
    private readonly read: (visit: (queue: string, totals: CounterValues) => void) => Promise<void>,
    registers: Registry[],
  ) {
    super({
      name: spec.name,
      help: spec.help,
      labelNames: ['queue'],
      buckets: spec.boundsMs.map((ms) => ms / 1000),
      registers,
    });
  }

  override async get(): ReturnType<Histogram<'queue'>['get']> {
    const { name, help, counter, boundsMs } = this.spec;
    // Bucket lines carry the `le` label, which the Histogram's own label type does not list.
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    await this.read((queue, totals) => {
      for (const le of boundsMs) {
        values.push({
          metricName: `${name}_bucket`,
          labels: { le: le / 1000, queue },
          value: totals[`${counter}:${le}` as CounterName],
        });
      }
      const count = totals[`${counter}:+Inf`];
      values.push({ metricName: `${name}_bucket`, labels: { le: '+Inf', queue }, value: count });
      values.push({ metricName: `${name}_sum`, labels: { queue }, value: totals[`${counter}:sum`] / 1000 });
      values.push({ metricName: `${name}_count`, labels: { queue }, value: count });
    });
    const metric = { name, help, type: 'histogram', values, aggregator: 'sum' };
    return metric as unknown as Awaited<ReturnType<Histogram<'queue'>['get']>>;
  }

  /** What the registry's text exposition calls (prom-client's Histogram.get() goes through it too). */
  getForPromString(): ReturnType<Histogram<'queue'>['get']> {
    return this.get();
  }
}
