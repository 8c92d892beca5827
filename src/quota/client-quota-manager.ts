import type { ClientQuotaSource, QuotaClient } from './quota-resolution.ts';
import { QuotaSensors } from './quota-sensors.ts';
import { assertQuotaWindow, type QuotaWindow, SampledRate } from './sampled-rate.ts';
import { toThrottleTimeMs } from './throttle-time.ts';

export type { ClientQuotaSource, QuotaClient } from './quota-resolution.ts';

export type ClientQuotaType = 'producer_byte_rate' | 'consumer_byte_rate' | 'request_percentage';

/** Kafka's ClientRequestQuotaManager.NanosToPercentagePerSecond: a second of thread time is 100%. */
const NANOS_TO_PERCENTAGE_PER_SECOND = 100 / 1e9;

/**
 * Kafka's ClientQuotaManager (producer and consumer byte rates) and ClientRequestQuotaManager
 * (request_percentage, KIP-124): each client's usage is recorded in the sampled rate of the
 * sensor its resolved quota entity names, and a rate over the quota yields the time to wait
 * until it is back within the quota.
 *
 * Times are integer milliseconds, as Kafka's are: `nowMs` is floored.
 */
export class ClientQuotaManager {
  private readonly sensors: QuotaSensors<SampledRate>;

  constructor(
    readonly type: ClientQuotaType,
    private readonly window: QuotaWindow,
    source: ClientQuotaSource,
  ) {
    assertQuotaWindow(window);
    this.sensors = new QuotaSensors(type, source, () => new SampledRate(window));
  }

  /** false when no quota of this type exists for any entity: callers skip all work. */
  get enabled(): boolean {
    return this.sensors.enabled;
  }

  /** How many quota sensors are live: one per resolved quota entity in use. */
  get sensorCount(): number {
    return this.sensors.size;
  }

  /** The metadata image changed: a new source; cached resolutions are dropped. */
  updateQuotas(source: ClientQuotaSource): void {
    this.sensors.updateQuotas(source);
  }

  /**
   * Records `value` (bytes; for request_percentage, the request's thread time in ms) and returns
   * the throttle time in ms, 0 within the quota. The throttle is the delay that brings the
   * observed rate O back to the quota T over the rate's window W: (O - T) / T * W; a request
   * quota throttles for at most one window (KIP-124).
   */
  recordAndGetThrottleTimeMs(client: QuotaClient, value: number, nowMs: number): number {
    if (!this.enabled) return 0;
    const timeMs = Math.floor(nowMs);
    const sensor = this.sensors.sensor(client, timeMs);
    const rate = sensor.stat;
    rate.record(this.quotaValue(value), timeMs);
    const observed = rate.rate(timeMs);
    if (observed <= sensor.bound) return 0;
    const throttleTimeMs = ((observed - sensor.bound) / sensor.bound) * rate.windowSizeMs(timeMs);
    return toThrottleTimeMs(
      this.type === 'request_percentage' ? Math.min(Math.round(throttleTimeMs), this.window.windowMs) : throttleTimeMs,
    );
  }

  /**
   * Kafka's recordNoThrottle: usage counted against the next request rather than this one (the
   * network thread time of a request whose response is already sent).
   */
  recordNoThrottle(client: QuotaClient, value: number, nowMs: number): void {
    if (!this.enabled) return;
    const timeMs = Math.floor(nowMs);
    this.sensors.sensor(client, timeMs).stat.record(this.quotaValue(value), timeMs);
  }

  /**
   * Kafka's unrecordQuotaSensor: a throttled fetch returns no data, so the bytes recorded for
   * it are taken back, recorded as a negative value that the windowed sum cancels.
   */
  unrecord(client: QuotaClient, value: number, nowMs: number): void {
    if (!this.enabled) return;
    const timeMs = Math.floor(nowMs);
    this.sensors.sensor(client, timeMs).stat.record(-this.quotaValue(value), timeMs);
  }

  /**
   * Kafka's getMaxValueInQuotaWindow: more than this is throttled even from an idle start, so a
   * fetch response is bounded by it. Infinity when unlimited.
   */
  maxValueInQuotaWindow(client: QuotaClient): number {
    if (!this.enabled) return Number.POSITIVE_INFINITY;
    const limit = this.sensors.limit(client);
    if (limit === undefined) return Number.POSITIVE_INFINITY;
    return limit * (this.window.samples - 1) * (this.window.windowMs / 1000);
  }

  /** Kafka records request time as whole nanoseconds converted to a percentage of one second. */
  private quotaValue(value: number): number {
    return this.type === 'request_percentage' ? Math.round(value * 1e6) * NANOS_TO_PERCENTAGE_PER_SECOND : value;
  }
}
