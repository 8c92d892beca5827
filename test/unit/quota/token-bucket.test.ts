import assert from 'node:assert/strict';
import { TokenBucket } from '../../../src/quota/token-bucket.ts';

describe('TokenBucket (KIP-599)', () => {
  const window = { samples: 10, windowMs: 1000 };

  it('starts full: a burst of samples * window seconds * quota', () => {
    const bucket = new TokenBucket(window);
    assert.equal(bucket.tokens(10, 5000), 100);
  });

  it('spends below zero and refills at the quota per second, up to the burst', () => {
    const bucket = new TokenBucket(window);
    bucket.record(90, 10, 0);
    bucket.record(90, 10, 0);
    assert.equal(bucket.tokens(10, 0), -80);
    assert.equal(bucket.tokens(10, 5000), -30);
    assert.equal(bucket.tokens(10, 8000), 0);
    assert.equal(bucket.tokens(10, 60_000), 100);
  });

  it('follows a quota change: the new refill rate and burst apply from then on', () => {
    const bucket = new TokenBucket(window);
    bucket.record(100, 10, 0);
    assert.equal(bucket.tokens(20, 1000), 20);
    assert.equal(bucket.tokens(1, 1000), 10, 'clamped to the smaller burst');
  });
});
