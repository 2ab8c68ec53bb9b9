/**
 * A Prometheus histogram cheap to observe (see BucketHistogram), shared by
 * the service's metrics (metrics.ts) and the participants' (participant-metrics.ts).
 */
import type { Metric, Registry } from 'prom-client';

export type Observe = { observe(value: number): void };

/** One label set's counts: per bucket (not cumulative), sum and count. */
class SeriesCounts implements Observe {
  readonly perBucket: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Record<string, string>,
  ) {
    this.perBucket = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) this.perBucket[i]!++;
    this.sum += value;
    this.count++;
  }
}

/**
 * A Prometheus histogram whose observe is a bucket search and three
 * additions on a series the caller keeps; registered in a prom-client
 * registry, which formats it (at scrape time) exactly as its own Histogram's
 * values: `_bucket{le}` cumulative, `+Inf`, `_sum`, `_count` per series.
 */
export class BucketHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series: SeriesCounts[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** A new series for these label values (the caller keeps it: one per label set). */
  labels(...values: string[]): Observe {
    const labels: Record<string, string> = {};
    this.labelNames.forEach((name, i) => (labels[name] = values[i] ?? ''));
    const series = new SeriesCounts(this.bounds, labels);
    this.series.push(series);
    return series;
  }

  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: unknown[] }> {
    const values: unknown[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += s.perBucket[i]!;
        values.push({ labels: { le }, sharedLabels: s.labels, value: cumulative, metricName: bucket });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    const { name, help, type, aggregator } = this;
    return Promise.resolve({ name, help, type, aggregator, values });
  }

  reset(): void {
    for (const s of this.series) {
      s.perBucket.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}
