/**
 * Kafka's ConnectionQuotas: the connection counts (per IP, per listener, broker-wide), the
 * connection creation rates (broker-wide, per listener, per IP) and the decisions the
 * acceptors make from them. Pure: the caller passes the time and does the waiting, closing
 * and counting down.
 */
import { type QuotaWindow, SampledRate } from '../quota/sampled-rate.ts';

/** A listener's own limits: listener.name.<l>.max.connections and .max.connection.creation.rate. */
export interface ListenerConnectionLimits {
  readonly maxConnections: number;
  readonly maxConnectionCreationRate: number;
}

/** The dynamic limits (cluster-wide dynamic configs in Kafka). */
export interface ConnectionQuotaLimits {
  /** max.connections.per.ip */
  readonly maxConnectionsPerIp: number;
  /** max.connections.per.ip.overrides, by IP address (hostnames resolved, see canonicalIp). */
  readonly maxConnectionsPerIpOverrides: ReadonlyMap<string, number>;
  /** max.connections */
  readonly maxConnections: number;
  /** max.connection.creation.rate */
  readonly maxConnectionCreationRate: number;
  /** By listener name; a listener absent here has the broker-wide values, as Kafka's valuesWithPrefixOverride gives it. */
  readonly listeners: ReadonlyMap<string, ListenerConnectionLimits>;
  /** The `connection_creation_rate` of the `ip` quota entity for an IP; undefined: unlimited. */
  readonly ipConnectionCreationRate?: (ip: string) => number | undefined;
}

/** What becomes of a connection that found its slot (Kafka's inc, after waitForConnectionSlot). */
export type IpAdmission =
  | { readonly kind: 'accepted' }
  /** TooManyConnectionsException: close now; the connection is not counted. */
  | { readonly kind: 'too-many-connections'; readonly max: number }
  /** ConnectionThrottledException: close after `throttleTimeMs`; the connection is not counted. */
  | { readonly kind: 'throttled'; readonly throttleTimeMs: number };

/** Int.MaxValue: Kafka's "no limit" for every connection limit and rate. */
export const UNLIMITED = 2_147_483_647;

/** Kafka keeps an IP's rate sensor for an hour without connections (ConnectionQuotaEntity.ipQuotaEntity). */
const IP_RATE_EXPIRY_MS = 3_600_000;
/** How often idle IP rates are dropped: Kafka's Metrics expires sensors every 30 s. */
const IP_RATE_SWEEP_INTERVAL_MS = 30_000;

export class ConnectionQuotas {
  private readonly counts = new Map<string, number>();
  private readonly listenerCounts = new Map<string, number>();
  private total = 0;
  private readonly brokerRate: SampledRate;
  private readonly listenerRates = new Map<string, SampledRate>();
  private readonly ipRates = new Map<string, { readonly rate: SampledRate; lastRecordMs: number }>();
  private lastIpSweepMs = Number.NEGATIVE_INFINITY;
  /** The longest a connection waits for a rate: one sample window, as Kafka's maxThrottleTimeMs. */
  private readonly maxThrottleTimeMs: number;

  constructor(
    private readonly window: QuotaWindow,
    private limits: ConnectionQuotaLimits,
    /** inter.broker.listener.name: the listener protected from max.connections when it is one of several. */
    private readonly interBrokerListenerName: string | null,
  ) {
    this.brokerRate = new SampledRate(window);
    this.maxThrottleTimeMs = window.windowMs;
  }

  /** Counts the connections of `listener` (Kafka's addListener); a listener not added counts toward no listener limit. */
  addListener(listener: string): void {
    if (this.listenerCounts.has(listener)) return;
    this.listenerCounts.set(listener, 0);
    this.listenerRates.set(listener, new SampledRate(this.window));
  }

  /** New limits; the rates measured so far are kept, as Kafka updates its sensors' quotas in place. */
  update(limits: ConnectionQuotaLimits): void {
    this.limits = limits;
  }

  get totalCount(): number {
    return this.total;
  }

  /** Open connections from `ip`. */
  get(ip: string): number {
    return this.counts.get(ip) ?? 0;
  }

  listenerCount(listener: string): number {
    return this.listenerCounts.get(listener) ?? 0;
  }

  /**
   * Records a new connection into the broker-wide and the listener's rate and returns how
   * long the acceptor waits to bring them back within their limits (the longer of the two,
   * at most one sample window). The protected inter-broker listener skips the broker-wide rate.
   */
  recordConnectionAndGetThrottleTimeMs(listener: string, nowMs: number): number {
    const brokerThrottleMs = this.isProtected(listener)
      ? 0
      : this.recordAndGetThrottleTimeMs(this.brokerRate, this.limits.maxConnectionCreationRate, nowMs);
    const listenerRate = this.listenerRates.get(listener);
    if (listenerRate === undefined) return 0;
    return Math.max(
      brokerThrottleMs,
      this.recordAndGetThrottleTimeMs(listenerRate, this.listenerLimits(listener).maxConnectionCreationRate, nowMs),
    );
  }

  /** Whether a connection of `listener` may be counted now; otherwise its acceptor waits. */
  connectionSlotAvailable(listener: string): boolean {
    if (this.listenerCount(listener) >= this.listenerLimits(listener).maxConnections) return false;
    if (this.isProtected(listener)) return true;
    return this.total < this.limits.maxConnections;
  }

  /**
   * A connection from `ip` on `listener` that found its slot: checked against the IP's
   * connection rate, then counted, then checked against the IP's connection limit.
   */
  inc(listener: string, ip: string, nowMs: number): IpAdmission {
    const throttleTimeMs = this.recordIpConnectionMaybeThrottle(listener, ip, nowMs);
    if (throttleTimeMs > 0) return { kind: 'throttled', throttleTimeMs };
    const count = this.get(ip);
    const max = this.limits.maxConnectionsPerIpOverrides.get(ip) ?? this.limits.maxConnectionsPerIp;
    if (count >= max) return { kind: 'too-many-connections', max };
    this.counts.set(ip, count + 1);
    this.total += 1;
    const listenerCount = this.listenerCounts.get(listener);
    if (listenerCount !== undefined) this.listenerCounts.set(listener, listenerCount + 1);
    return { kind: 'accepted' };
  }

  /** A counted connection closed. */
  dec(listener: string, ip: string): void {
    const count = this.counts.get(ip);
    if (count === undefined) throw new Error(`Attempted to decrease connection count for address with no connections, address: ${ip}`);
    if (count === 1) this.counts.delete(ip);
    else this.counts.set(ip, count - 1);
    if (this.total <= 0) throw new Error('Attempted to decrease total connection count for broker with no connections');
    this.total -= 1;
    const listenerCount = this.listenerCounts.get(listener);
    if (listenerCount === undefined) return;
    if (listenerCount === 0) throw new Error(`Attempted to decrease connection count for listener ${listener} with no connections`);
    this.listenerCounts.set(listener, listenerCount - 1);
  }

  /** More connections are open than max.connections allows: some listener has to close connections. */
  get overMaxConnections(): boolean {
    return this.total > this.limits.maxConnections;
  }

  /**
   * Whether `listener` has to close connections: more are open broker-wide than
   * max.connections allows (the protected inter-broker listener took them), and `listener`
   * is not the protected one.
   */
  maxConnectionsExceeded(listener: string): boolean {
    return this.total > this.limits.maxConnections && !this.isProtected(listener);
  }

  /** The inter-broker listener is protected only when there are other listeners to take connections from. */
  isProtected(listener: string): boolean {
    return listener === this.interBrokerListenerName && this.listenerCounts.size > 1;
  }

  private listenerLimits(listener: string): ListenerConnectionLimits {
    return (
      this.limits.listeners.get(listener) ?? {
        maxConnections: this.limits.maxConnections,
        maxConnectionCreationRate: this.limits.maxConnectionCreationRate,
      }
    );
  }

  /**
   * An IP over its connection rate is refused (closed after the throttle time), and its
   * connection is taken back out of every rate it was recorded in, so that refused attempts
   * do not slow down the other clients.
   */
  private recordIpConnectionMaybeThrottle(listener: string, ip: string, nowMs: number): number {
    this.expireIpRates(nowMs);
    const quota = this.limits.ipConnectionCreationRate?.(ip);
    if (quota === undefined || quota === UNLIMITED) return 0;
    let entry = this.ipRates.get(ip);
    if (entry === undefined) {
      entry = { rate: new SampledRate(this.window), lastRecordMs: nowMs };
      this.ipRates.set(ip, entry);
    }
    entry.lastRecordMs = nowMs;
    const throttleTimeMs = this.recordAndGetThrottleTimeMs(entry.rate, quota, nowMs);
    if (throttleTimeMs > 0) {
      entry.rate.record(-1, nowMs);
      if (!this.isProtected(listener)) this.brokerRate.record(-1, nowMs);
      this.listenerRates.get(listener)?.record(-1, nowMs);
    }
    return throttleTimeMs;
  }

  private expireIpRates(nowMs: number): void {
    if (nowMs - this.lastIpSweepMs < IP_RATE_SWEEP_INTERVAL_MS) return;
    this.lastIpSweepMs = nowMs;
    for (const [ip, entry] of this.ipRates) {
      if (nowMs - entry.lastRecordMs > IP_RATE_EXPIRY_MS) this.ipRates.delete(ip);
    }
  }

  /**
   * Kafka's Sensor.record with its quota check, and QuotaUtils.boundedThrottleTime: the
   * connection is recorded either way; over the quota, the wait that brings the rate back to
   * it over the rate's current window.
   */
  private recordAndGetThrottleTimeMs(rate: SampledRate, quota: number, nowMs: number): number {
    rate.record(1, nowMs);
    const observed = rate.rate(nowMs);
    if (observed <= quota) return 0;
    const throttleTimeMs = Math.round(((observed - quota) / quota) * rate.windowSizeMs(nowMs));
    return Math.min(throttleTimeMs, this.maxThrottleTimeMs);
  }
}

/**
 * Parses max.connections.per.ip.overrides ("host:n,ip:n") as Kafka's Csv.parseCsvMap does:
 * entries split on commas, each on its last colon (IPv6 addresses keep theirs).
 */
export function parseMaxConnectionsPerIpOverrides(value: string): Map<string, number> {
  const overrides = new Map<string, number>();
  if (value === '') return overrides;
  for (const entry of value.split(/\s*,\s*/)) {
    const colon = entry.lastIndexOf(':');
    if (colon < 0) {
      throw new Error(`Error parsing configuration property 'max.connections.per.ip.overrides': no ':' in entry '${entry}'`);
    }
    const host = entry.slice(0, colon).trim();
    const count = entry.slice(colon + 1).trim();
    const n = Number(count);
    if (!/^[+-]?\d+$/.test(count) || n !== (n | 0)) throw new Error(`For input string: "${count}"`);
    overrides.set(host, Number(count));
  }
  const invalid = [...overrides.keys()].filter((host) => !VALID_HOST_CHARACTERS.test(host));
  if (invalid.length > 0) throw new Error(`max.connections.per.ip.overrides contains invalid addresses : ${invalid.join(',')}`);
  return overrides;
}

/** Kafka's Utils.VALID_HOST_CHARACTERS. */
const VALID_HOST_CHARACTERS = /^[0-9a-zA-Z\-%._:]*$/;

/**
 * One spelling per address, as Java compares InetAddresses by their bytes: an IPv4-mapped
 * IPv6 address is its IPv4 address, an IPv6 address is in its canonical (RFC 5952) form.
 */
export function canonicalIp(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1]!;
  if (!address.includes(':')) return address;
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}
