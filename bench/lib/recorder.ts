/** Collects every figure of a run, per repetition, for the JSON file and the tables. */
import type { SystemName } from '../adapters/adapter.js';
import { median } from './stats.js';

/** One measured quantity of one system, with its value in each repetition. */
export interface Figure {
  workload: string;
  metric: string;
  unit: string;
  better: 'higher' | 'lower';
  system: SystemName;
  values: number[];
  median: number;
}

/** Collects figures, distributions (for the chart) and details (kept in the JSON only). */
export class Recorder {
  readonly figures: Figure[] = [];
  /** Percentile curves (0..100) by chart name and system. */
  readonly distributions: Record<string, Partial<Record<SystemName, number[]>>> = {};
  readonly details: Record<string, unknown> = {};
  /** Redis's own ceiling: operations per second by redis-benchmark case. */
  readonly ceilings: Array<{ name: string; opsPerSec: number }> = [];

  /** Add one repetition's value of a figure. */
  add(
    workload: string,
    metric: string,
    unit: string,
    better: 'higher' | 'lower',
    system: SystemName,
    value: number,
  ): void {
    let figure = this.figures.find(
      (f) => f.workload === workload && f.metric === metric && f.system === system,
    );
    if (!figure) {
      figure = { workload, metric, unit, better, system, values: [], median: NaN };
      this.figures.push(figure);
    }
    figure.values.push(value);
    figure.median = median(figure.values);
  }

  /** Keep a percentile curve for the chart (the last repetition's wins). */
  distribution(chart: string, system: SystemName, curve: number[]): void {
    (this.distributions[chart] ??= {})[system] = curve;
  }
}
