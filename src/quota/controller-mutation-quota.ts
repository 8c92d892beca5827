import { Errors, KafkaError } from '../../protocol/errors.ts';
import { type Clock, systemClock } from '../runtime/index.ts';
import type { ClientQuotaSource, QuotaClient } from './quota-resolution.ts';
import { type QuotaSensor, QuotaSensors } from './quota-sensors.ts';
import { assertQuotaWindow, type QuotaWindow } from './sampled-rate.ts';
import { toThrottleTimeMs } from './throttle-time.ts';
import { TokenBucket } from './token-bucket.ts';

const CONTROLLER_MUTATION_RATE = 'controller_mutation_rate';

/** Kafka's ThrottlingQuotaExceededException: a strict quota refused a mutation. */
export class ThrottlingQuotaExceededError extends KafkaError {
  constructor(readonly throttleTimeMs: number) {
    super(Errors.THROTTLING_QUOTA_EXCEEDED);
  }
}

/** The quota of one request's topic and partition mutations, for the request's lifetime. */
export interface ControllerMutationQuota {
  /** Spends `permits` (partitions created or deleted); a strict quota may throw ThrottlingQuotaExceededError. */
  record(permits: number): void;
  /** The request's throttle time so far (Kafka's throttleTime). */
  throttleTimeMs(): number;
}

/** Kafka's UnboundedControllerMutationQuota, while no controller_mutation_rate quota exists. */
const UNBOUNDED: ControllerMutationQuota = {
  record: () => {},
  throttleTimeMs: () => 0,
};

/**
 * Kafka's ControllerMutationQuotaManager (KIP-599): the controller_mutation_rate quota, a token
 * bucket per resolved quota entity, spent by CreateTopics, CreatePartitions and DeleteTopics.
 *
 * A request's quota reads the time itself (record and throttleTimeMs take none), from `clock`:
 * the broker's, so that the simulation runs it on virtual time. Times are integer milliseconds.
 */
export class ControllerMutationQuotaManager {
  private readonly sensors: QuotaSensors<TokenBucket>;

  constructor(
    window: QuotaWindow,
    source: ClientQuotaSource,
    private readonly clock: Pick<Clock, 'monotonicMs'> = systemClock,
  ) {
    assertQuotaWindow(window);
    this.sensors = new QuotaSensors(CONTROLLER_MUTATION_RATE, source, () => new TokenBucket(window));
  }

  /** How many quota sensors are live. */
  get sensorCount(): number {
    return this.sensors.size;
  }

  updateQuotas(source: ClientQuotaSource): void {
    this.sensors.updateQuotas(source);
  }

  /**
   * strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): record() throws
   * ThrottlingQuotaExceededError (THROTTLING_QUOTA_EXCEEDED) when the quota is already exceeded
   * before recording, and records any amount otherwise; permissive: always records, and
   * throttles once the quota is exceeded.
   */
  newQuotaFor(client: QuotaClient, strict: boolean): ControllerMutationQuota {
    if (!this.sensors.enabled) return UNBOUNDED;
    const sensor = this.sensors.sensor(client, this.nowMs());
    return strict
      ? new StrictControllerMutationQuota(sensor, () => this.nowMs())
      : new PermissiveControllerMutationQuota(sensor, () => this.nowMs());
  }

  private nowMs(): number {
    return Math.floor(this.clock.monotonicMs());
  }
}

abstract class AbstractControllerMutationQuota implements ControllerMutationQuota {
  private lastThrottleTimeMs = 0;
  private lastRecordedTimeMs = 0;

  constructor(
    protected readonly sensor: QuotaSensor<TokenBucket>,
    protected readonly nowMs: () => number,
  ) {}

  abstract record(permits: number): void;

  /** Less the time since it was computed: the response may leave long after, e.g. from the purgatory. */
  throttleTimeMs(): number {
    return toThrottleTimeMs(this.lastThrottleTimeMs - (this.nowMs() - this.lastRecordedTimeMs));
  }

  /** The wait until the bucket's `tokens` (below zero) refill to zero. */
  protected updateThrottleTime(tokens: number, nowMs: number): number {
    this.lastThrottleTimeMs = Math.round((-tokens / this.sensor.bound) * 1000);
    this.lastRecordedTimeMs = nowMs;
    return this.lastThrottleTimeMs;
  }

  protected spend(permits: number, nowMs: number): void {
    this.sensor.stat.record(permits, this.sensor.bound, nowMs);
    this.sensor.lastRecordMs = nowMs;
  }
}

/** Refuses mutations while the quota is exceeded; never throttles a request that was admitted within it. */
class StrictControllerMutationQuota extends AbstractControllerMutationQuota {
  record(permits: number): void {
    const nowMs = this.nowMs();
    const tokens = this.sensor.stat.tokens(this.sensor.bound, nowMs);
    if (tokens < 0) throw new ThrottlingQuotaExceededError(toThrottleTimeMs(this.updateThrottleTime(tokens, nowMs)));
    this.spend(permits, nowMs);
  }
}

/** Accepts every mutation (older request versions cannot be refused), and throttles once over the quota. */
class PermissiveControllerMutationQuota extends AbstractControllerMutationQuota {
  record(permits: number): void {
    const nowMs = this.nowMs();
    this.spend(permits, nowMs);
    const tokens = this.sensor.stat.tokens(this.sensor.bound, nowMs);
    if (tokens < 0) this.updateThrottleTime(tokens, nowMs);
  }
}
