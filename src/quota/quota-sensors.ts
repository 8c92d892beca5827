import { type ClientQuotaSource, type QuotaClient, type QuotaMetricTags, quotaLimit, quotaMetricTags } from './quota-resolution.ts';

/** Kafka's ClientQuotaManager.InactiveSensorExpirationTimeSeconds: a sensor unused for an hour is dropped. */
const INACTIVE_SENSOR_EXPIRATION_MS = 3600 * 1000;
/** How often Kafka's Metrics looks for expired sensors (its ExpireSensorTask period). */
const EXPIRE_SENSOR_PERIOD_MS = 30 * 1000;

/** The bound of a sensor no quota applies to: Kafka's Long.MAX_VALUE, as a double. */
export const UNLIMITED_QUOTA = 2 ** 63;

export interface QuotaSensor<S> {
  readonly tags: QuotaMetricTags;
  readonly stat: S;
  /** The quota in force for these tags, UNLIMITED_QUOTA for none. */
  bound: number;
  lastRecordMs: number;
}

interface Resolution {
  readonly tags: QuotaMetricTags;
  lastUsedMs: number;
}

/**
 * The quota sensors of one quota key, one per distinct metric tags, as Kafka's Metrics registry
 * holds them for a ClientQuotaManager: clients resolving to the same tags record into the same
 * stat. Sensors and the per-client resolutions expire after an hour of inactivity, so memory
 * follows the active clients, not every client id ever seen.
 */
export class QuotaSensors<S> {
  private source: ClientQuotaSource;
  private anyQuota: boolean;
  private readonly sensors = new Map<string, QuotaSensor<S>>();
  private readonly resolutions = new Map<string, Resolution>();
  private nextExpiryMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly key: string,
    source: ClientQuotaSource,
    private readonly newStat: () => S,
  ) {
    this.source = source;
    this.anyQuota = source.has(key);
  }

  /** Whether any entity has a quota of this key. */
  get enabled(): boolean {
    return this.anyQuota;
  }

  /** How many sensors are live. */
  get size(): number {
    return this.sensors.size;
  }

  /**
   * Re-resolves every client, and re-bounds every live sensor from the new quotas (as Kafka's
   * updateQuotaMetricConfigs does): a sensor keeps its recorded history under the new bound.
   */
  updateQuotas(source: ClientQuotaSource): void {
    this.source = source;
    this.anyQuota = source.has(this.key);
    this.resolutions.clear();
    for (const sensor of this.sensors.values()) sensor.bound = this.boundOf(sensor.tags);
  }

  /** The client's sensor, created on first use, marked as used at `nowMs`. */
  sensor(client: QuotaClient, nowMs: number): QuotaSensor<S> {
    this.expireInactive(nowMs);
    const tags = this.resolve(client, nowMs);
    const sensorKey = pairKey(tags);
    let sensor = this.sensors.get(sensorKey);
    if (sensor === undefined) {
      sensor = { tags, stat: this.newStat(), bound: this.boundOf(tags), lastRecordMs: nowMs };
      this.sensors.set(sensorKey, sensor);
    }
    sensor.lastRecordMs = nowMs;
    return sensor;
  }

  /** The quota that applies to the client, undefined when none does. */
  limit(client: QuotaClient): number | undefined {
    const tags = this.resolutions.get(pairKey(client))?.tags ?? quotaMetricTags(this.source, this.key, client);
    return quotaLimit(this.source, this.key, tags);
  }

  private resolve(client: QuotaClient, nowMs: number): QuotaMetricTags {
    const key = pairKey(client);
    let resolution = this.resolutions.get(key);
    if (resolution === undefined) {
      resolution = { tags: quotaMetricTags(this.source, this.key, client), lastUsedMs: nowMs };
      this.resolutions.set(key, resolution);
    }
    resolution.lastUsedMs = nowMs;
    return resolution.tags;
  }

  private boundOf(tags: QuotaMetricTags): number {
    return quotaLimit(this.source, this.key, tags) ?? UNLIMITED_QUOTA;
  }

  private expireInactive(nowMs: number): void {
    if (nowMs < this.nextExpiryMs) return;
    this.nextExpiryMs = nowMs + EXPIRE_SENSOR_PERIOD_MS;
    for (const [key, sensor] of this.sensors) {
      if (nowMs - sensor.lastRecordMs > INACTIVE_SENSOR_EXPIRATION_MS) this.sensors.delete(key);
    }
    for (const [key, resolution] of this.resolutions) {
      if (nowMs - resolution.lastUsedMs > INACTIVE_SENSOR_EXPIRATION_MS) this.resolutions.delete(key);
    }
  }
}

/** A map key for a user and client id, unambiguous whatever characters they hold. */
function pairKey(pair: QuotaClient | QuotaMetricTags): string {
  return `${pair.user.length}:${pair.user}${pair.clientId}`;
}
