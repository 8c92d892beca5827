/**
 * The broker's registration and lease with the active controller, as Kafka's
 * BrokerLifecycleManager: BrokerRegistration (a new incarnation id per process, the
 * advertised listeners, broker.rack, the metadata.version range this broker supports), then a
 * BrokerHeartbeat right away and every broker.heartbeat.interval.ms with the offset of the
 * local MetadataImage. The controller unfences the broker once that offset reaches its
 * registration record; a single node is unfenced a few milliseconds after it registers.
 *
 * - A heartbeat answered with isFenced after the broker was unfenced means its session
 *   expired at the controller: it is logged and heartbeating goes on (the next heartbeat
 *   unfences it again). STALE_BROKER_EPOCH (the controller lost or replaced the registration)
 *   makes the broker register again.
 * - INCONSISTENT_CLUSTER_ID and UNSUPPORTED_VERSION are fatal. DUPLICATE_BROKER_REGISTRATION
 *   is retried as Kafka retries it, since a broker restarted before the session of its previous
 *   incarnation expired is refused until then; it becomes fatal once no previous session can
 *   still be alive (another live process uses the node id). Fatal refusals reject whenUnfenced.
 * - Controlled shutdown heartbeats with wantShutDown until the controller answers
 *   shouldShutDown (it has moved leadership away), or until the caller's timeout.
 * - KIP-858: the registration lists the directory.id of each log dir; every heartbeat lists
 *   the ones that failed (OfflineLogDirs), and a dir failing sends one at once. Kafka also
 *   shuts the broker down when the controller has not heard of a failed dir within
 *   log.dir.failure.timeout.ms; here the heartbeats simply go on carrying it.
 */
import { Errors, KafkaError, errorByCode } from '../../protocol/errors.ts';
import { makeBrokerHeartbeatRequest } from '../../protocol/messages/broker-heartbeat.ts';
import {
  makeBrokerRegistrationRequest,
  makeBrokerRegistrationRequestFeature,
  makeBrokerRegistrationRequestListener,
} from '../../protocol/messages/broker-registration.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import type { Listener } from '../config/broker-config.ts';
import type { Logger } from '../observability/logger.ts';
import { runGuarded } from '../runtime/guard.ts';
import type { ControllerChannel } from './controller-channel.ts';
import {
  ELIGIBLE_LEADER_REPLICAS_FEATURE,
  ELIGIBLE_LEADER_REPLICAS_LEVEL,
  METADATA_VERSION_FEATURE,
  METADATA_VERSION_LEVEL,
  randomUuid,
} from './controller.ts';
import { SECURITY_PROTOCOL_ID } from './manager.ts';
import { systemClock, type Clock, type TimerHandle } from '../runtime/clock.ts';
import type { Random } from '../runtime/random.ts';

/** Kafka's BrokerState, as far as this manager drives it. */
export type BrokerLifecycleState = 'NOT_RUNNING' | 'STARTING' | 'RUNNING' | 'PENDING_CONTROLLED_SHUTDOWN' | 'SHUTTING_DOWN';

export interface BrokerLifecycleOptions {
  readonly nodeId: number;
  readonly clusterId: string;
  readonly channel: Pick<ControllerChannel, 'send'>;
  /** The advertised broker listeners (no controller listener). */
  readonly listeners: readonly Listener[];
  /** broker.rack */
  readonly rack: string | null;
  /** The offset of the last record applied to the local MetadataImage. */
  readonly currentMetadataOffset: () => number;
  /** broker.heartbeat.interval.ms */
  readonly heartbeatIntervalMs: number;
  /** broker.session.timeout.ms */
  readonly sessionTimeoutMs: number;
  /**
   * How long DUPLICATE_BROKER_REGISTRATION is retried before it is fatal; defaults to twice
   * the session timeout, past which a previous incarnation that stopped heartbeating is fenced.
   */
  readonly duplicateRegistrationRetryMs?: number;
  /** Defaults to a random uuid: one incarnation per process. */
  readonly incarnationId?: string;
  /** The epoch of the previous incarnation when it shut down cleanly (KIP-966); -1 when unknown. */
  readonly previousBrokerEpoch?: bigint;
  /** The directory.id of each online log dir at start-up (BrokerRegistration LogDirs). */
  readonly logDirIds?: readonly string[];
  /** The directory.id of each log dir that failed since start-up (BrokerHeartbeat OfflineLogDirs). */
  readonly offlineLogDirIds?: () => readonly string[];
  readonly clock?: Clock;
  /** Draws the incarnation id when none is given. */
  readonly random?: Random;
  readonly logger: Logger;
}

/** Kafka's BrokerLifecycleManager: the first heartbeats while catching up come this soon. */
const CATCH_UP_HEARTBEAT_MS = 10;
/** The heartbeat after the first "not yet" of a controlled shutdown comes this soon. */
const SHUTDOWN_FIRST_RETRY_MS = 50;
const FAILURE_BACKOFF_INITIAL_MS = 100;
/** The lowest metadata.version level this broker can read. */
const MIN_METADATA_VERSION_LEVEL = 1;

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(err: Error): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export class BrokerLifecycleManager {
  readonly incarnationId: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private currentState: BrokerLifecycleState = 'NOT_RUNNING';
  private epoch = -1n;
  private fencedNow = true;
  private readonly unfenced = deferred();
  private unfencedSettled = false;
  private shutdown: Deferred | null = null;
  private shutdownTimer: TimerHandle | null = null;
  private gotShutdownResponse = false;
  private timer: TimerHandle | null = null;
  private inFlight = false;
  private immediateNext = false;
  private stopped = false;
  private failures = 0;
  private duplicateSinceMs: number | null = null;

  constructor(private readonly options: BrokerLifecycleOptions) {
    this.incarnationId = options.incarnationId ?? randomUuid(options.random);
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger;
    // Nobody may be waiting yet when a fatal refusal or close rejects it.
    this.unfenced.promise.catch(() => undefined);
  }

  /** The epoch the controller gave this registration; -1 while unregistered. */
  get brokerEpoch(): bigint {
    return this.epoch;
  }

  get state(): BrokerLifecycleState {
    return this.currentState;
  }

  /** Whether the controller last reported this broker fenced (true until the first unfencing). */
  get isFenced(): boolean {
    return this.fencedNow;
  }

  /** Registers, then heartbeats until close(). */
  start(): void {
    if (this.currentState !== 'NOT_RUNNING' || this.stopped) throw new Error('broker lifecycle manager already started');
    this.currentState = 'STARTING';
    this.schedule(0);
  }

  /** Resolves once the controller has unfenced this broker; rejects on a fatal registration refusal or close. */
  whenUnfenced(): Promise<void> {
    return this.unfenced.promise;
  }

  /**
   * Heartbeats with wantShutDown until the controller answers shouldShutDown, then stops
   * heartbeating; resolves then, or after `timeoutMs` (logged), or at once when the broker
   * never registered.
   */
  controlledShutdown(timeoutMs: number): Promise<void> {
    if (this.shutdown !== null) return this.shutdown.promise;
    const shutdown = deferred();
    this.shutdown = shutdown;
    if (this.stopped || this.epoch < 0n) {
      this.stop('SHUTTING_DOWN');
      shutdown.resolve();
      return shutdown.promise;
    }
    this.currentState = 'PENDING_CONTROLLED_SHUTDOWN';
    this.logger.info({ brokerEpoch: this.epoch }, 'beginning controlled shutdown');
    this.shutdownTimer = this.clock.setTimeout(() => {
      this.shutdownTimer = null;
      this.logger.warn({ timeoutMs }, 'controlled shutdown did not complete in time: the controller still needs this broker');
      shutdown.resolve();
    }, timeoutMs);
    this.communicateSoon();
    return shutdown.promise;
  }

  /**
   * Kafka's propagateDirectoryFailure: a log dir failed, so the controller hears of it in a
   * heartbeat now rather than at the next interval (and moves leadership off the dir).
   */
  propagateDirectoryFailure(): void {
    if (this.stopped || this.epoch < 0n) return;
    this.communicateSoon();
  }

  /** Stops registering and heartbeating; a pending whenUnfenced rejects. */
  async close(): Promise<void> {
    if (!this.unfencedSettled) this.settleUnfenced(new Error(`broker ${this.options.nodeId} shut down before the controller unfenced it`));
    this.stop(this.currentState === 'NOT_RUNNING' ? 'NOT_RUNNING' : 'SHUTTING_DOWN');
    this.shutdown?.resolve();
  }

  private stop(state: BrokerLifecycleState): void {
    this.stopped = true;
    this.currentState = state;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    if (this.shutdownTimer !== null) this.clock.clearTimeout(this.shutdownTimer);
    this.shutdownTimer = null;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      runGuarded(
        (err, what) => this.logger.error({ err }, `${what} failed`),
        'broker registration or heartbeat',
        () => this.communicate(),
        () => {
          this.inFlight = false;
          this.schedule(this.failureBackoffMs());
        },
      );
    }, delayMs);
  }

  private communicateSoon(): void {
    if (this.inFlight) this.immediateNext = true;
    else this.schedule(0);
  }

  private async communicate(): Promise<void> {
    if (this.stopped) return;
    if (this.inFlight) {
      this.immediateNext = true;
      return;
    }
    this.inFlight = true;
    const nextMs = this.epoch < 0n ? await this.register() : await this.heartbeat();
    this.inFlight = false;
    if (nextMs === null || this.stopped) return;
    this.schedule(this.immediateNext ? 0 : nextMs);
    this.immediateNext = false;
  }

  /** The delay before the next communication, or null to stop. */
  private async register(): Promise<number | null> {
    const o = this.options;
    const request = makeBrokerRegistrationRequest({
      brokerId: o.nodeId,
      clusterId: o.clusterId,
      incarnationId: this.incarnationId,
      listeners: o.listeners.map((l) =>
        makeBrokerRegistrationRequestListener({
          name: l.name,
          host: l.host,
          port: l.port,
          securityProtocol: SECURITY_PROTOCOL_ID[l.securityProtocol] ?? 0,
        }),
      ),
      features: [
        makeBrokerRegistrationRequestFeature({
          name: METADATA_VERSION_FEATURE,
          minSupportedVersion: MIN_METADATA_VERSION_LEVEL,
          maxSupportedVersion: METADATA_VERSION_LEVEL,
        }),
        makeBrokerRegistrationRequestFeature({
          name: ELIGIBLE_LEADER_REPLICAS_FEATURE,
          minSupportedVersion: 0,
          maxSupportedVersion: ELIGIBLE_LEADER_REPLICAS_LEVEL,
        }),
      ],
      rack: o.rack,
      isMigratingZkBroker: false,
      logDirs: [...(o.logDirIds ?? [])],
      previousBrokerEpoch: o.previousBrokerEpoch ?? -1n,
    });
    const version = apis.get(ApiKey.BrokerRegistration)!.maxVersion;
    const response = await o.channel.send(ApiKey.BrokerRegistration, request, version, this.requestTimeoutMs());
    if (this.stopped) return null;
    switch (response.errorCode) {
      case Errors.NONE.code:
        this.epoch = response.brokerEpoch;
        this.failures = 0;
        this.duplicateSinceMs = null;
        this.logger.info({ brokerEpoch: this.epoch, incarnationId: this.incarnationId }, 'registered with the controller');
        // The first heartbeat at once: a caught-up broker is unfenced by it.
        return 0;
      case Errors.DUPLICATE_BROKER_REGISTRATION.code: {
        // How long it has been retried: monotonic time, unmoved by wall-clock steps.
        const now = this.clock.monotonicMs();
        this.duplicateSinceMs ??= now;
        const retryMs = o.duplicateRegistrationRetryMs ?? 2 * o.sessionTimeoutMs;
        if (now - this.duplicateSinceMs >= retryMs) {
          return this.fatal(
            response.errorCode,
            `Broker ${o.nodeId} cannot register with the controller: another broker with node.id ${o.nodeId} is registered ` +
              `and still heartbeating (DUPLICATE_BROKER_REGISTRATION for ${now - this.duplicateSinceMs} ms). ` +
              `Is another process running with node.id=${o.nodeId}?`,
          );
        }
        this.logger.warn(
          { error: 'DUPLICATE_BROKER_REGISTRATION' },
          'the controller still has a live session for a previous incarnation of this node id; retrying until it expires',
        );
        return this.failureBackoffMs();
      }
      case Errors.INCONSISTENT_CLUSTER_ID.code:
        return this.fatal(
          response.errorCode,
          `Broker ${o.nodeId} cannot register with the controller: its cluster id ${o.clusterId} is not the controller's ` +
            `(INCONSISTENT_CLUSTER_ID). Its log directories belong to another cluster.`,
        );
      case Errors.UNSUPPORTED_VERSION.code:
        return this.fatal(
          response.errorCode,
          `Broker ${o.nodeId} cannot register with the controller: the controller does not support its BrokerRegistration ` +
            `or its metadata.version range ${MIN_METADATA_VERSION_LEVEL}-${METADATA_VERSION_LEVEL} (UNSUPPORTED_VERSION).`,
        );
      default:
        this.logger.warn({ error: errorByCode(response.errorCode).name }, 'broker registration failed; retrying');
        return this.failureBackoffMs();
    }
  }

  private async heartbeat(): Promise<number | null> {
    const o = this.options;
    const wantShutDown = this.currentState === 'PENDING_CONTROLLED_SHUTDOWN';
    const request = makeBrokerHeartbeatRequest({
      brokerId: o.nodeId,
      brokerEpoch: this.epoch,
      currentMetadataOffset: BigInt(o.currentMetadataOffset()),
      wantFence: false,
      wantShutDown,
      offlineLogDirs: [...(o.offlineLogDirIds?.() ?? [])],
    });
    const version = apis.get(ApiKey.BrokerHeartbeat)!.maxVersion;
    const response = await o.channel.send(ApiKey.BrokerHeartbeat, request, version, this.requestTimeoutMs());
    if (this.stopped) return null;
    if (response.errorCode === Errors.STALE_BROKER_EPOCH.code) {
      if (wantShutDown) {
        // The controller holds no registration of ours, so nothing of ours to move away.
        this.logger.info('the controller no longer knows this broker epoch: controlled shutdown has nothing left to do');
        this.stop('SHUTTING_DOWN');
        this.shutdown?.resolve();
        return null;
      }
      this.logger.warn(
        { brokerEpoch: this.epoch },
        'the controller no longer knows this broker epoch (STALE_BROKER_EPOCH); registering again',
      );
      this.epoch = -1n;
      this.fencedNow = true;
      return 0;
    }
    if (response.errorCode !== Errors.NONE.code) {
      this.logger.warn({ error: errorByCode(response.errorCode).name }, 'broker heartbeat failed; retrying');
      return this.failureBackoffMs();
    }
    this.failures = 0;
    this.observeFencing(response.isFenced);
    if (wantShutDown && this.currentState === 'PENDING_CONTROLLED_SHUTDOWN') {
      if (response.shouldShutDown) {
        this.logger.info('the controller has completed our controlled shutdown');
        this.stop('SHUTTING_DOWN');
        this.shutdown?.resolve();
        return null;
      }
      const first = !this.gotShutdownResponse;
      this.gotShutdownResponse = true;
      return first ? SHUTDOWN_FIRST_RETRY_MS : o.heartbeatIntervalMs;
    }
    if (this.currentState === 'STARTING' && !response.isFenced) this.currentState = 'RUNNING';
    return this.currentState === 'STARTING' && !response.isCaughtUp ? CATCH_UP_HEARTBEAT_MS : o.heartbeatIntervalMs;
  }

  private observeFencing(fenced: boolean): void {
    const was = this.fencedNow;
    this.fencedNow = fenced;
    if (!fenced && !this.unfencedSettled) {
      this.logger.info({ brokerEpoch: this.epoch }, 'the controller unfenced this broker');
      this.settleUnfenced(null);
    } else if (!fenced && was) {
      this.logger.info({ brokerEpoch: this.epoch }, 'the controller unfenced this broker again');
    } else if (fenced && !was && this.currentState !== 'PENDING_CONTROLLED_SHUTDOWN') {
      const offlineLogDirIds = this.options.offlineLogDirIds?.() ?? [];
      if (offlineLogDirIds.length > 0) {
        this.logger.warn({ brokerEpoch: this.epoch, offlineLogDirIds }, 'the controller fenced this broker (its log dirs are offline)');
      } else {
        this.logger.warn(
          { brokerEpoch: this.epoch, sessionTimeoutMs: this.options.sessionTimeoutMs },
          'the controller fenced this broker (its session expired); heartbeating on',
        );
      }
    }
  }

  private settleUnfenced(err: Error | null): void {
    this.unfencedSettled = true;
    if (err === null) this.unfenced.resolve();
    else this.unfenced.reject(err);
  }

  private fatal(errorCode: number, message: string): null {
    this.logger.error({ error: errorByCode(errorCode).name }, message);
    this.stop('NOT_RUNNING');
    if (!this.unfencedSettled) this.settleUnfenced(new KafkaError(errorByCode(errorCode), message));
    this.shutdown?.resolve();
    return null;
  }

  /** Kafka's heartbeat channel gives a request half a session before it counts as lost. */
  private requestTimeoutMs(): number {
    return Math.max(1, Math.floor(this.options.sessionTimeoutMs / 2));
  }

  private failureBackoffMs(): number {
    const ms = Math.min(
      FAILURE_BACKOFF_INITIAL_MS * 2 ** this.failures,
      Math.max(FAILURE_BACKOFF_INITIAL_MS, this.options.sessionTimeoutMs / 2),
    );
    this.failures = Math.min(this.failures + 1, 30);
    return ms;
  }
}
