import type { QuotaWindow } from './sampled-rate.ts';

/**
 * Kafka's TokenBucket stat (KIP-599), the controller mutation quota: credits refill at the quota
 * (per second) up to a burst of `samples * window seconds * quota`, recording spends them, and
 * the quota is exhausted while the credits are below zero. Unlike a sampled rate, one large burst
 * is paid back in `-credits / quota` seconds rather than held until its sample expires.
 *
 * The quota is passed on each call, as Kafka reads it from the metric's current config: a quota
 * update changes the refill rate and the burst of an existing bucket.
 */
export class TokenBucket {
  private credits = 0;
  /** Kafka starts from time 0 on an epoch clock, which fills a new bucket; undefined does the same on a monotonic one. */
  private lastUpdateMs: number | undefined;

  constructor(private readonly window: QuotaWindow) {}

  /** The credits left at `nowMs`, after refilling. */
  tokens(quota: number, nowMs: number): number {
    this.refill(quota, nowMs);
    return this.credits;
  }

  record(value: number, quota: number, nowMs: number): void {
    this.refill(quota, nowMs);
    this.credits = Math.min(this.burst(quota), this.credits - value);
  }

  private refill(quota: number, nowMs: number): void {
    const burst = this.burst(quota);
    this.credits = this.lastUpdateMs === undefined ? burst : Math.min(burst, this.credits + quota * ((nowMs - this.lastUpdateMs) / 1000));
    this.lastUpdateMs = nowMs;
  }

  private burst(quota: number): number {
    return this.window.samples * (this.window.windowMs / 1000) * quota;
  }
}
