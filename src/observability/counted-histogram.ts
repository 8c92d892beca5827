/**
 * A histogram of one label for hot paths, rendered by a prom-client registry exactly as its
 * own Histogram would be. prom-client's Histogram turns the label values into a string key and
 * looks the series up on every observation, even through a child from `labels()` (about 1 µs,
 * as long as the rest of a small produce request's metrics together); here the caller resolves
 * a series once and keeps it, and an observation is a bucket search and three additions.
 */
import type { Metric, Registry, RegistryContentType } from 'prom-client';

interface HistogramValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
  exemplar?: null | undefined;
}

/** What a prom-client registry reads from a metric to render it. */
interface HistogramObject {
  name: string;
  help: string;
  type: 'histogram';
  aggregator: 'sum';
  values: HistogramValue[];
}

export class HistogramSeries {
  /** Observations per bucket, not cumulative; the last counts those above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly upperBounds: readonly number[],
    /** The series' label, one object for its life (the registry caches its rendering by identity). */
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(upperBounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.upperBounds;
    let i = 0;
    while (i < bounds.length && !(value <= bounds[i]!)) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

export class CountedHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly labelNames: readonly L[];
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: L,
    private readonly upperBounds: readonly number[],
    registry: Registry<RegistryContentType>,
  ) {
    this.labelNames = [labelName];
    // The registry renders any metric that answers get() the way prom-client's do; its type
    // names only prom-client's own classes.
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of `value`, made on first use: it appears in the exposition from then on. */
  labels(value: string): HistogramSeries {
    let s = this.series.get(value);
    if (s === undefined) {
      s = new HistogramSeries(this.upperBounds, { [this.labelName]: value });
      this.series.set(value, s);
    }
    return s;
  }

  /** Zeroes every series rather than dropping them: their holders keep counting into them. */
  reset(): void {
    for (const s of this.series.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }

  /** The samples with the series' label beside `le`, as prom-client's Histogram.get() gives them. */
  async get(): Promise<HistogramObject> {
    const data = this.getForPromString();
    for (const v of data.values) {
      v.labels = { ...v.labels, ...v.sharedLabels };
      delete v.sharedLabels;
    }
    return data;
  }

  /** The samples as the registry's text renderer reads them: the series' label shared by its samples. */
  getForPromString(): HistogramObject {
    const bucket = `${this.name}_bucket`;
    const values: HistogramValue[] = [];
    for (const s of this.series.values()) {
      const sharedLabels = s.labels as Record<string, string>;
      let cumulative = 0;
      this.upperBounds.forEach((le, i) => {
        cumulative += s.counts[i]!;
        values.push({ labels: { le }, sharedLabels, value: cumulative, metricName: bucket, exemplar: null });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels, value: s.count, metricName: bucket, exemplar: null },
        { labels: {}, sharedLabels, value: s.sum, metricName: `${this.name}_sum`, exemplar: undefined },
        { labels: {}, sharedLabels, value: s.count, metricName: `${this.name}_count`, exemplar: undefined },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
