import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Histogram, Registry, type RegistryContentType } from 'prom-client';
import { CountedHistogram } from '../../../src/observability/counted-histogram.ts';

const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Values on the bounds themselves, between them and past the last, in any order, under a few label values. */
const observations = fc.array(
  fc.record({
    api: fc.constantFrom('Produce', 'Fetch', 'Metadata', 'a "quoted"\\name'),
    value: fc.oneof(
      fc.constantFrom(...BUCKETS, 0),
      fc.double({ min: 0, max: 60, noNaN: true }),
      fc.double({ min: -1, max: 0, noNaN: true }),
    ),
  }),
  { maxLength: 200 },
);

function registries(openMetrics: boolean): [Registry<RegistryContentType>, Registry<RegistryContentType>] {
  const contentType = openMetrics ? Registry.OPENMETRICS_CONTENT_TYPE : Registry.PROMETHEUS_CONTENT_TYPE;
  const registry = () => {
    const r = new Registry<RegistryContentType>();
    r.setContentType(contentType);
    r.setDefaultLabels({ node_id: '1' });
    return r;
  };
  return [registry(), registry()];
}

describe('CountedHistogram', () => {
  it("renders as prom-client's Histogram given the same observations, in both formats", async () => {
    await fc.assert(
      fc.asyncProperty(observations, fc.boolean(), async (observed, openMetrics) => {
        const [expected, actual] = registries(openMetrics);
        const reference = new Histogram({ name: 'd_seconds', help: 'h', labelNames: ['api'], buckets: BUCKETS, registers: [expected] });
        const counted = new CountedHistogram('d_seconds', 'h', 'api', BUCKETS, actual);
        for (const { api, value } of observed) {
          reference.labels(api).observe(value);
          counted.labels(api).observe(value);
        }
        assert.equal(await actual.metrics(), await expected.metrics());
        assert.deepEqual(await counted.get(), await reference.get());
      }),
    );
  });

  it('keeps counting into a series its holder resolved before a reset, from zero', async () => {
    const [, registry] = registries(false);
    const counted = new CountedHistogram('d_seconds', 'h', 'api', BUCKETS, registry);
    const produce = counted.labels('Produce');
    produce.observe(0.002);
    registry.resetMetrics();
    produce.observe(0.2);
    const values = (await counted.get()).values;
    const sample = (name: string, le?: number | string) =>
      values.find((v) => v.metricName === name && v.labels.le === le && v.labels.api === 'Produce')?.value;
    assert.equal(sample('d_seconds_count'), 1);
    assert.equal(sample('d_seconds_sum'), 0.2);
    assert.equal(sample('d_seconds_bucket', 0.1), 0);
    assert.equal(sample('d_seconds_bucket', 0.25), 1);
  });
});
