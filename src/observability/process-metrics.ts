/**
 * The process and Node.js metrics of prom-client's collectDefaultMetrics (CPU, memory, file
 * descriptors, event loop lag, handles, heap spaces, version), all but its garbage collection
 * histogram: that one observes every collection through a perf_hooks PerformanceObserver,
 * whose per-collection JavaScript callback cost about 6 % of the broker's CPU under a produce
 * load (scripts/bench/metrics.ts), where the metrics as a whole may cost 3 %. The heap gauges
 * still show what the collector keeps.
 */
import { createRequire } from 'node:module';
import { collectDefaultMetrics, type Registry, type RegistryContentType } from 'prom-client';

type DefaultMetric = (registry: Registry<RegistryContentType>, config: { prefix: string; eventLoopMonitoringPrecision: number }) => void;

const require = createRequire(import.meta.url);

export function collectProcessMetrics(registry: Registry<RegistryContentType>, prefix: string): void {
  // prom-client's own list of its default metrics, each a module of its lib/metrics.
  for (const name of collectDefaultMetrics.metricsList) {
    if (name === 'gc') continue;
    const metric = require(`prom-client/lib/metrics/${name}`) as DefaultMetric;
    metric(registry, { prefix, eventLoopMonitoringPrecision: 10 });
  }
}
