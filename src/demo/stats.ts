/** Small statistics shared by the demo and the CLI. */

/** The value at quantile `q` of an ascending array (0 when empty). */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
}
