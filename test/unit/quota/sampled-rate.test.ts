import assert from 'node:assert/strict';
import { SampledRate } from '../../../src/quota/sampled-rate.ts';

// Kafka's defaults: quota.window.num=11, quota.window.size.seconds=1.
const KAFKA_DEFAULT = { samples: 11, windowMs: 1000 };

describe('SampledRate (Kafka Rate over a WindowedSum)', () => {
  it('counts at least samples - 1 full windows while fewer have elapsed', () => {
    const rate = new SampledRate(KAFKA_DEFAULT);
    rate.record(1000, 0);
    assert.equal(rate.windowSizeMs(0), 10_000);
    assert.equal(rate.rate(0), 100);
    // Half a window later: 500 ms elapsed plus the 10 missing full windows.
    assert.equal(rate.windowSizeMs(500), 10_500);
    assert.equal(rate.rate(500), 1000 / 10.5);
  });

  it('divides by the elapsed time once enough windows have passed', () => {
    const rate = new SampledRate(KAFKA_DEFAULT);
    for (let t = 0; t <= 10_000; t += 1000) rate.record(100, t);
    assert.equal(rate.windowSizeMs(10_000), 10_000);
    assert.equal(rate.rate(10_000), 110);
    assert.equal(rate.rate(10_999), 1100 / 10.999);
  });

  it('drops a sample once samples * window has passed since its last event', () => {
    const rate = new SampledRate(KAFKA_DEFAULT);
    rate.record(1000, 0);
    assert.equal(rate.rate(10_999), 1000 / 10.999);
    assert.equal(rate.rate(11_000), 0);
  });

  it('measures from the oldest sample kept after an idle gap', () => {
    const rate = new SampledRate({ samples: 2, windowMs: 1000 });
    rate.record(100, 0);
    rate.record(100, 1500);
    // The first sample still overlaps the window: 1999 ms elapsed, more than one full window.
    assert.equal(rate.rate(1999), 200 / 1.999);
    // Now it is purged; the second started 500 ms ago, padded to one full window.
    assert.equal(rate.windowSizeMs(2000), 1500);
    assert.equal(rate.rate(2000), 100 / 1.5);
  });

  it('recycles samples round-robin, keeping one extra for the window overlap', () => {
    const rate = new SampledRate({ samples: 2, windowMs: 1000 });
    for (const t of [0, 1000, 2000, 3000]) rate.record(10, t);
    // At 3000 the sample of 0 was reused, the one of 1000 is purged, the one of 2000 is the oldest.
    assert.equal(rate.windowSizeMs(3000), 1000);
    assert.equal(rate.rate(3000), 20);
  });

  it('never divides by less than 1 ms', () => {
    const rate = new SampledRate({ samples: 1, windowMs: 1000 });
    rate.record(5, 0);
    assert.equal(rate.windowSizeMs(0), 1);
    assert.equal(rate.rate(0), 5000);
  });

  it('is zero with nothing recorded', () => {
    const rate = new SampledRate(KAFKA_DEFAULT);
    assert.equal(rate.rate(123), 0);
    assert.equal(rate.windowSizeMs(123), 10_000);
  });

  it('sums a negative value away within the sample', () => {
    const rate = new SampledRate(KAFKA_DEFAULT);
    rate.record(700, 0);
    rate.record(300, 100);
    rate.record(-300, 200);
    assert.equal(rate.rate(200), 700 / 10.2);
  });

  it('refuses a window Kafka refuses', () => {
    assert.throws(() => new SampledRate({ samples: 0, windowMs: 1000 }), /at least 1/);
    assert.throws(() => new SampledRate({ samples: 2, windowMs: 0 }), /positive/);
  });
});
