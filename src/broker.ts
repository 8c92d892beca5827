/**
 * The composition root: builds one broker node from its configuration and wires its
 * components. start() brings them up in dependency order, registers every handler with the
 * services it needs (src/handlers/index.ts) and opens the listeners last; close() stops
 * accepting, lets in-flight requests finish and closes components in reverse order
 * (checkpointing logs).
 *
 * process.roles decides what the node runs, as in Kafka's KRaft mode: `broker,controller`
 * (combined) and `broker` nodes host partitions, register with the active controller and
 * heartbeat; a `broker` node follows the metadata log as a Raft observer. A `controller` node
 * runs the metadata quorum and serves its controller listeners only: no partition logs, no
 * data path, no group coordinator, no registration.
 */
import { METADATA_TOPIC, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC } from '../protocol/internal-topics.ts';
import { LogManager, createDirectory, type LogConfig } from '../storage/index.ts';
import { LogDirFailureChannel } from '../storage/log-dir-failure.ts';
import { topicLogConfig, type BrokerConfig, type Listener } from './config/index.ts';
import { MetadataManager } from './metadata/manager.ts';
import { createDataPath, type DataPath } from './replication/data-path.ts';
import type { ReplicaManager } from './replication/replica-manager.ts';
import { createLogger, type LogFormat, type Logger } from './observability/logger.ts';
import { registerControllerNodeHandlers, registerHandlers } from './handlers/index.ts';
import { QuotaManagers } from './server/quota-managers.ts';
import { HandlerRegistry } from './handlers/registry.ts';
import type { EnvelopeServices } from './handlers/envelope.ts';
import { dynamicConnectionLimits, SocketServer, type BoundListener, type ListenerSpec } from './server/socket-server.ts';
import {
  controllerClientSecurity,
  interBrokerClientSecurity,
  listenerSecurity,
  type BuiltListenerSecurity,
} from './security/listener-security.ts';
import { watchKeystores } from './security/keystore-watch.ts';
import { applyAclDelta, configuredAuthorizer } from './security/authorizer-config.ts';
import type { StandardAuthorizer } from './security/authorizer.ts';
import { GroupCoordinatorService } from './coordinator/service.ts';
import { groupCoordinatorConfig, transactionCoordinatorConfig } from './coordinator/config.ts';
import { coordinatorTopicAccess } from './coordinator/topic-access.ts';
import { offsetsTopicSpec, transactionStateTopicSpec } from './coordinator/internal-topics.ts';
import { TransactionCoordinatorService } from './coordinator/transaction-service.ts';
import { TxnMarkerChannel } from './coordinator/transaction-markers.ts';
import { TransactionVerifier } from './coordinator/transaction-verifier.ts';
import { InterBrokerChannel } from './client/inter-broker.ts';
import { handleWriteTxnMarkers } from './handlers/txn-markers.ts';
import { RequestProcessor } from './server/request-processor.ts';
import { runGuarded } from './runtime/guard.ts';
import { systemRuntime, type Runtime } from './runtime/index.ts';
import { ApiKey } from '../protocol/messages/index.ts';
import { Errors } from '../protocol/errors.ts';
import type { CreatableTopic, TopicCreator } from './metadata/controller.ts';
import { ControllerChannelManager, producerIdBlockAllocator } from './metadata/controller-channel.ts';
import { BrokerLifecycleManager } from './metadata/broker-lifecycle.ts';
import { ImageWaiter, createTopicsThroughController } from './handlers/forward.ts';
import { controllerSideHandlers, type RequestAccess } from './handlers/index.ts';
import { ALTER_PARTITION_VERSION } from './replication/isr-manager.ts';
import { BrokerMetrics, type MetricsSource } from './observability/metrics.ts';
import { HttpServer, type BoundHttpListener } from './observability/http-server.ts';
import { ConsumerLagSampler } from './observability/lag-sampler.ts';
import { registerAdminApi } from './observability/admin-api.ts';
import { registerConsole } from './observability/console-routes.ts';
import { KafkaCluster } from './client/cluster.ts';
import { describeGroup } from './client/groups.ts';

const DYNAMIC_CONNECTION_LIMITS: ReadonlySet<string> = new Set([
  'max.connections',
  'max.connections.per.ip',
  'max.connections.per.ip.overrides',
  'max.connection.creation.rate',
]);

export interface BrokerOptions {
  readonly config: BrokerConfig;
  /** Defaults to a pino logger at `log.level` (which then follows dynamic changes). */
  readonly logger?: Logger;
  /** Where the default logger writes: 1 (stdout, the default) or 2 (stderr). */
  readonly logFd?: number;
  /** How the default logger writes: JSON lines (the default) or text for a terminal. */
  readonly logFormat?: LogFormat;
  /**
   * Time, timers, randomness and the network the node runs on; defaults to the system's.
   * Tests and the simulation hand in their own to run the same code on virtual ones.
   */
  readonly runtime?: Runtime;
}

export class Broker {
  readonly config: BrokerConfig;
  readonly logger: Logger;
  readonly nodeId: number;
  readonly runtime: Runtime;
  /** The node's share of the metadata quorum: the MetadataImage, the controller. */
  readonly metadata: MetadataManager;
  private readonly registry = new HandlerRegistry();
  private readonly server: SocketServer;
  private logManager: LogManager | null = null;
  private dataPath: DataPath | null = null;
  private groups: GroupCoordinatorService | null = null;
  private transactions: TransactionCoordinatorService | null = null;
  private interBroker: InterBrokerChannel | null = null;
  private transactionVerifier: TransactionVerifier | null = null;
  private lifecycle: BrokerLifecycleManager | null = null;
  private readonly channels: ControllerChannelManager[] = [];
  private images: ImageWaiter | null = null;
  /** Only with an HTTP listener to serve them: a node nobody scrapes counts nothing. */
  private readonly metrics: BrokerMetrics | null;
  private readonly http: HttpServer | null;
  private lagSampler: ConsumerLagSampler | null = null;
  /** This node's own admin client (the lag sampler, the admin API), opened on first use. */
  private adminClient: KafkaCluster | null = null;
  private state: 'new' | 'starting' | 'running' | 'closing' | 'closed' = 'new';
  /** Each listener's TLS and SASL, built (and checked) when the node is made. */
  private readonly security: ReadonlyMap<string, BuiltListenerSecurity>;
  private readonly keystoreWatches: { stop(): void }[] = [];
  /** The ACL authorizer of authorizer.class.name, null when none is configured. */
  private readonly authorizer: StandardAuthorizer | null;
  /** Client quotas, from the ClientQuotaRecords of the metadata log. */
  private readonly quotas: QuotaManagers;

  constructor(options: BrokerOptions) {
    this.config = options.config;
    this.nodeId = this.config.nodeId;
    this.runtime = options.runtime ?? systemRuntime;
    this.logger =
      options.logger ??
      createLogger({
        level: this.config.getString('log.level'),
        base: { nodeId: this.nodeId },
        fd: options.logFd ?? 1,
        format: options.logFormat,
      });
    this.logger.info({ config: this.config.explicitValues() }, 'broker configuration (explicitly set values)');
    for (const name of this.config.unknownNames) {
      this.logger.warn({ config: name }, "The configuration was supplied but isn't a known config.");
    }
    // log.level is dynamic (per broker); a logger the caller passed in keeps the caller's level.
    if (options.logger === undefined) {
      this.config.onChange((name) => {
        if (name === 'log.level') this.logger.level = this.config.getString('log.level');
      });
    }
    this.metadata = new MetadataManager({
      config: this.config,
      logger: this.logger.child({ component: 'metadata' }),
      runtime: this.runtime,
    });
    this.security = new Map(this.config.listeners.map((l) => [l.name, this.buildListenerSecurity(l)]));
    this.authorizer = configuredAuthorizer(this.config);
    const authorizer = this.authorizer;
    if (authorizer !== null) {
      this.metadata.onMetadataDelta((delta) => {
        try {
          applyAclDelta(authorizer, delta);
        } catch (err) {
          this.logger.error({ err }, 'could not apply the ACL changes of a metadata delta');
        }
      });
    }
    const quotas = new QuotaManagers(
      {
        client: { samples: this.config.getInt('quota.window.num'), windowMs: this.config.getInt('quota.window.size.seconds') * 1000 },
        controllerMutation: {
          samples: this.config.getInt('controller.quota.window.num'),
          windowMs: this.config.getInt('controller.quota.window.size.seconds') * 1000,
        },
      },
      this.metadata.image(),
      () => this.runtime.clock.monotonicMs(),
    );
    this.quotas = quotas;
    this.metadata.onMetadataDelta((delta, image) => {
      if (delta.clientQuotasChanged) quotas.update(image);
    });
    const serveHttp = this.config.httpListeners.length > 0;
    this.metrics = serveHttp
      ? new BrokerMetrics({
          partitionSeriesMax: this.config.getInt('metrics.partition.series.max'),
          onCountError: (topic, err) =>
            this.logger.warn(
              { component: 'metrics', topic, err },
              'could not read the records of a retry or dead-letter topic to count them',
            ),
        })
      : null;
    this.http = serveHttp ? new HttpServer(this.logger.child({ component: 'http' })) : null;
    this.server = new SocketServer(
      new RequestProcessor(this.registry, this.logger, this.metrics, undefined, this.quotas),
      {
        maxRequestBytes: this.config.getInt('socket.request.max.bytes'),
        maxUnauthenticatedRequestBytes: this.config.getInt('sasl.server.max.receive.size'),
        maxQueuedRequests: this.config.getInt('queued.max.requests'),
        maxBufferedBytes: this.config.getLong('connection.max.buffered.bytes'),
        idleMs: this.config.getLong('connections.max.idle.ms'),
      },
      this.logger,
      {
        ...dynamicConnectionLimits(this.config),
        maxQueuedRequestBytes: this.config.getLong('queued.max.request.bytes'),
        interBrokerListenerName: this.config.interBrokerListenerName,
        quotaWindowNum: this.config.getInt('quota.window.num'),
        quotaWindowSizeSeconds: this.config.getInt('quota.window.size.seconds'),
        ipConnectionCreationRate: (ip) => quotas.connectionCreationRate(ip),
      },
      this.runtime,
    );
    // The connection limits are cluster-wide dynamic configs: kafka-configs --entity-default changes them live.
    this.config.onChange((name) => {
      if (!DYNAMIC_CONNECTION_LIMITS.has(name)) return;
      this.server
        .updateLimits(dynamicConnectionLimits(this.config))
        .catch((err) => this.logger.error({ err, config: name }, 'could not apply the connection limits'));
    });
  }

  /** The listeners as bound (ports resolved). Empty before start(). */
  get listeners(): readonly BoundListener[] {
    return this.server.listeners;
  }

  /** The HTTP listeners as bound (ports resolved). Empty without http.listeners or before start(). */
  get httpListeners(): readonly BoundHttpListener[] {
    return this.http?.listeners ?? [];
  }

  /** The socket server, for tests that inspect connection state. */
  get socketServer(): SocketServer {
    return this.server;
  }

  /** The partitions this node hosts, null until start() built the data path: for read-only inspection. */
  get replicaManager(): ReplicaManager | null {
    return this.dataPath?.services.replicaManager ?? null;
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`broker already ${this.state}`);
    this.state = 'starting';
    // First, so that orchestrators see the node live (and not yet ready) while its logs recover.
    if (this.http !== null) await this.startHttp(this.http);
    const fsync = !this.config.getBoolean('unsafe.bypass.fsync');
    for (const dir of this.config.logDirs) await createDirectory(this.runtime.fileSystem, dir, fsync);
    if (!fsync) {
      this.logger.warn(
        { logDirs: this.config.logDirs, metadataLogDir: this.config.metadataLogDir },
        'unsafe.bypass.fsync=true: nothing is fsynced; an OS crash or power loss can lose or corrupt this data',
      );
    }
    const roles = this.config.processRoles;
    if (roles.includes('controller') && !roles.includes('broker')) {
      await this.startControllerOnly();
      return;
    }
    const logDirFailures = new LogDirFailureChannel((logDir, err, what) =>
      this.logger.error({ err, logDir, what }, `log dir ${logDir} failed: its partitions are offline on this node until it restarts`),
    );
    this.logManager = await LogManager.startup({
      logDirs: this.config.logDirs,
      defaultConfig: topicLogConfig({}, this.config),
      topicConfig: (topic) => this.logConfigOf(topic),
      tasks: {
        retentionCheckIntervalMs: this.config.getLong('log.retention.check.interval.ms'),
        flushOffsetCheckpointIntervalMs: this.config.getInt('log.flush.offset.checkpoint.interval.ms'),
        flushStartOffsetCheckpointIntervalMs: this.config.getInt('log.flush.start.offset.checkpoint.interval.ms'),
        highWatermarkCheckpointIntervalMs: this.config.getLong('replica.high.watermark.checkpoint.interval.ms'),
        cleanerEnable: this.config.getBoolean('log.cleaner.enable'),
        cleanerBackoffMs: this.config.getLong('log.cleaner.backoff.ms'),
      },
      // The metadata log is the Raft client's alone: its history is bounded by snapshots, never
      // by topic retention, and a second open copy would race it on the same files.
      skipTopics: [METADATA_TOPIC],
      onBackgroundError: (err, what) => this.logger.error({ err }, `storage: ${what} failed`),
      logDirFailureChannel: logDirFailures,
      unsafeBypassFsync: this.config.getBoolean('unsafe.bypass.fsync'),
      fileSystem: this.runtime.fileSystem,
      clock: this.runtime.clock,
    });
    await this.metadata.start();
    const config = this.config;
    const requestTimeoutMs = config.getInt('request.timeout.ms');
    const isBroker = config.processRoles.includes('broker');
    // Only a controller serves the controller-side handlers; a broker-only node always reaches
    // the active controller over the network.
    const local = config.processRoles.includes('controller')
      ? controllerSideHandlers({
          metadata: { nodeId: this.nodeId, config, metadata: this.metadata },
          controllerApis: { controller: this.metadata.controller },
          envelope: this.envelopeServices(),
        })
      : undefined;
    // One channel per purpose: a controller answers one connection's requests in order, so a
    // slow CreateTopics must not hold back heartbeats or ISR changes.
    const channel = (purpose: string) => {
      const c = new ControllerChannelManager({
        nodeId: this.nodeId,
        activeControllerId: () => this.metadata.activeControllerId(),
        voters: config.quorumVoters,
        bootstrapServers: config.quorumBootstrapServers,
        local,
        retryBackoffMs: config.getInt('controller.quorum.retry.backoff.ms'),
        clientId: `${purpose}-channel-${this.nodeId}`,
        requestTimeoutMs: config.getInt('controller.quorum.request.timeout.ms'),
        logger: this.logger.child({ component: `${purpose}-channel` }),
        network: this.runtime.network,
        security: controllerClientSecurity(config),
        clock: this.runtime.clock,
      });
      this.channels.push(c);
      return c;
    };
    const forwarding = channel('forwarding');
    const heartbeats = channel('heartbeat');
    const isrChanges = channel('alter-partition');
    const brokerEpoch = () => this.lifecycle?.brokerEpoch ?? -1n;
    // A forwarded CreateTopics (and an auto-created topic) is answered once this broker serves
    // the partitions it created: the waiter sees an image after the data path applied it.
    const images = new ImageWaiter(this.metadata.image(), this.runtime.clock);
    this.images = images;
    const throughController = createTopicsThroughController(forwarding, requestTimeoutMs);
    const createTopics = async (topics: readonly CreatableTopic[]) => {
      const results = await throughController(topics);
      const created = results.filter((r) => r.errorCode === Errors.NONE.code).map((r) => r.name);
      if (created.length > 0) await images.waitFor((image) => created.every((name) => image.topic(name) !== undefined), requestTimeoutMs);
      return results;
    };
    this.dataPath = createDataPath({
      config,
      logManager: this.logManager,
      logDirFailures,
      metadata: {
        image: () => this.metadata.image(),
        onMetadataDelta: (listener) => this.metadata.onMetadataDelta(listener),
        allocateProducerIdBlock: producerIdBlockAllocator(forwarding, {
          brokerId: this.nodeId,
          brokerEpoch,
          timeoutMs: requestTimeoutMs,
        }),
      },
      onError: (err, what) => this.logger.error({ err }, `failed: ${what}`),
      clock: this.runtime.clock,
      random: this.runtime.random,
      network: this.runtime.network,
      traffic: this.metrics ?? undefined,
      alterPartition: (request) => isrChanges.send(ApiKey.AlterPartition, request, ALTER_PARTITION_VERSION, requestTimeoutMs),
      brokerEpoch,
      // The coordinators start once the data path exists: until then no transaction is known.
      verifyTransaction: (transactionalId, producerId, producerEpoch, topic, partition) =>
        this.transactionVerifier?.verify(transactionalId, producerId, producerEpoch, topic, partition) ??
        Promise.resolve(Errors.COORDINATOR_NOT_AVAILABLE.code),
      replicaEndpoint: (brokerId) => {
        const endpoint = this.metadata
          .image()
          .brokers.get(brokerId)
          ?.endpoints.find((e) => e.name === config.interBrokerListenerName);
        return endpoint === undefined ? undefined : { host: endpoint.host, port: endpoint.port };
      },
    });
    const dataPath = this.dataPath;
    this.metadata.onMetadataDelta((_delta, image) => {
      dataPath.publisher.whenIdle().then(() => images.published(image));
    });
    const { groups, transactions, followLeadership } = this.startCoordinators(this.dataPath, createTopics);
    // Every component exists now; no request can arrive before the listeners open below.
    registerHandlers(this.registry, {
      access: this.requestAccess(),
      logger: this.logger,
      fetchBandwidth: (ctx, request) => this.quotas.fetchBandwidth(ctx, request),
      mutationQuota: { quotaFor: (ctx, strict) => this.quotas.mutationQuotaFor(ctx, strict) },
      envelope: this.envelopeServices(),
      metadata: { nodeId: this.nodeId, config, metadata: this.metadata, createTopics },
      controllerApis: { controller: this.metadata.controller },
      forwarding: { nodeId: this.nodeId, channel: forwarding, forwardTimeoutMs: requestTimeoutMs, images },
      quorum: this.metadata,
      dataPath: this.dataPath.services,
      groups,
      transactions: {
        coordinator: transactions.coordinator,
        findCoordinator: (transactionalId, listenerName) => transactions.findCoordinator(transactionalId, listenerName),
        partitionExists: (topic, partition) => this.metadata.image().partition(topic, partition) !== undefined,
        offsetsPartitionFor: (groupId) => groups.coordinator.partitionFor(groupId),
      },
    });
    await this.server.start(this.listenerSpecs());
    this.watchKeystores();
    if (isBroker) {
      // Registered with the endpoints as bound (a configured port 0 is known only now); the
      // node is running once the controller unfenced it (it caught up with the metadata log).
      const directoryIds = this.metadata.directoryIds;
      const idsOf = (dirs: readonly string[]) => dirs.flatMap((dir) => directoryIds.get(dir) ?? []);
      const lifecycle = new BrokerLifecycleManager({
        nodeId: this.nodeId,
        clusterId: this.metadata.clusterId,
        channel: heartbeats,
        listeners: this.advertisedListeners(),
        rack: config.get('broker.rack'),
        currentMetadataOffset: () => this.metadata.image().offset,
        heartbeatIntervalMs: config.getInt('broker.heartbeat.interval.ms'),
        sessionTimeoutMs: config.getInt('broker.session.timeout.ms'),
        logDirIds: idsOf(config.logDirs.filter((dir) => !logDirFailures.isOffline(dir))),
        offlineLogDirIds: () => idsOf(logDirFailures.offlineLogDirs()),
        previousBrokerEpoch: this.logManager.previousBrokerEpoch,
        logger: this.logger.child({ component: 'broker-lifecycle' }),
        clock: this.runtime.clock,
        random: this.runtime.random,
      });
      this.lifecycle = lifecycle;
      logDirFailures.onOfflineLogDir(() => lifecycle.propagateDirectoryFailure());
      lifecycle.start();
      await lifecycle.whenUnfenced();
    }
    // Partitions are hosted once the broker has caught up with the metadata log (the
    // controller unfenced it), as Kafka publishes metadata to its replicas only then. A
    // restarted broker starts from its latest snapshot: acting on it at once, it would lead
    // partitions that were its own before it stopped — with a log an OS crash may have cut
    // short, to which its followers would truncate — and take the logs of topics created
    // since for strays. Caught up, it sees the leadership the controller moved away when it
    // fenced the previous incarnation, and what it does not host now is stray.
    await dataPath.start();
    followLeadership();
    await dataPath.publisher.removeStrayLogs();
    this.startLagSampler(groups);
    const r = this.logManager.recovery;
    this.logger.info(
      { recovery: { ...r } },
      `recovered ${r.partitions} partitions (${r.recoveredUnclean} after an unclean stop), ` +
        `truncated ${r.truncatedBytes} bytes, removed ${r.removedDirs} stray directories and ${r.removedTmpFiles} temp files`,
    );
    this.state = 'running';
  }

  /**
   * A controller-only node: the metadata quorum (its controller when it leads) behind the
   * controller listeners. Brokers reach it over the network; it hosts no partition and never
   * registers as a broker.
   */
  private async startControllerOnly(): Promise<void> {
    await this.metadata.start();
    const controller = this.metadata.controller;
    registerControllerNodeHandlers(this.registry, {
      access: this.requestAccess(),
      // Metadata (whose auto-creation uses createTopics) is served on broker listeners only.
      metadata: {
        nodeId: this.nodeId,
        config: this.config,
        metadata: this.metadata,
        createTopics: (topics) => controller.createTopics([...topics], false),
      },
      controllerApis: { controller },
      envelope: this.envelopeServices(),
      mutationQuota: { quotaFor: (ctx, strict) => this.quotas.mutationQuotaFor(ctx, strict) },
      quorum: this.metadata,
    });
    await this.server.start(this.listenerSpecs());
    this.watchKeystores();
    this.state = 'running';
  }

  /** The listeners to bind, each with the role of the requests it serves and its security. */
  private listenerSpecs(): ListenerSpec[] {
    const controllers = new Set(this.config.controllerListenerNames);
    return this.config.listeners.map((l) => ({
      name: l.name,
      host: l.host,
      port: l.port,
      securityProtocol: l.securityProtocol,
      role: controllers.has(l.name) ? 'controller' : 'broker',
      security: this.security.get(l.name)!,
    }));
  }

  /** Where the controller side serves an Envelope's inner request: this node's controller-listener registrations. */
  private envelopeServices(): EnvelopeServices {
    return { registry: this.registry, logger: this.logger.child({ component: 'envelope' }) };
  }

  /** The authorizer and what it reads of the topics (ids, existence, auto-creation). */
  private requestAccess(): RequestAccess {
    return {
      authorizer: this.authorizer,
      topics: {
        topicName: (id) => this.metadata.image().topicById(id)?.name,
        topicExists: (name) => this.metadata.image().topic(name) !== undefined,
        autoCreateTopicsEnable: () => this.config.getBoolean('auto.create.topics.enable'),
      },
    };
  }

  private buildListenerSecurity(listener: Listener): BuiltListenerSecurity {
    return listenerSecurity(this.config, listener, {
      scramCredential: (mechanism, user) => this.metadata.image().scramCredential(mechanism, user),
      nowMs: () => this.runtime.clock.now(),
    });
  }

  /**
   * A TLS listener whose keystore or truststore files change takes the new keys for the
   * connections it accepts from then on, as Kafka's dynamic ssl.keystore.* updates do; a
   * change that does not load is logged and the old keys stay.
   */
  private watchKeystores(): void {
    for (const [name, security] of this.security) {
      if (security.keystoreFiles.length === 0) continue;
      const listener = this.config.listeners.find((l) => l.name === name)!;
      const watch = watchKeystores(
        [...security.keystoreFiles],
        () => {
          try {
            const tls = this.buildListenerSecurity(listener).tls;
            if (tls !== null) this.server.reloadTls(name, tls);
            this.logger.info({ listener: name }, 'TLS keystore changed: new connections use the new certificates');
          } catch (err) {
            this.logger.error({ listener: name, err }, 'TLS keystore changed but does not load: the listener keeps its certificates');
          }
        },
        { onError: (err) => this.logger.warn({ listener: name, err }, 'could not read a TLS keystore file') },
      );
      this.keystoreWatches.push(watch);
    }
  }

  /** Requests to other brokers on the inter-broker listener (markers, transaction verification). */
  private interBrokerChannel(): InterBrokerChannel {
    this.interBroker ??= new InterBrokerChannel({
      nodeId: this.nodeId,
      purpose: 'coordinator-requests',
      endpoint: (brokerId) => {
        const endpoint = this.metadata
          .image()
          .brokers.get(brokerId)
          ?.endpoints.find((e) => e.name === this.config.interBrokerListenerName);
        return endpoint === undefined ? undefined : { host: endpoint.host, port: endpoint.port };
      },
      requestTimeoutMs: this.config.getInt('request.timeout.ms'),
      network: this.runtime.network,
      security: interBrokerClientSecurity(this.config),
      clock: this.runtime.clock,
    });
    return this.interBroker;
  }

  /** A topic's log config for the storage engine. */
  private logConfigOf(topic: string): LogConfig {
    return topicLogConfig(this.metadata.image().topicConfigs(topic), this.config);
  }

  /**
   * The group coordinator serves the groups of the `__consumer_offsets` partitions this node
   * leads, the transaction coordinator the transactional ids of the `__transaction_state`
   * partitions it leads; both follow leadership as the data path applies each metadata change,
   * so a partition's log is open before its state loads. `followLeadership` is for start(),
   * once the data path hosts its first image.
   */
  private startCoordinators(
    dataPath: DataPath,
    createTopics: TopicCreator,
  ): { groups: GroupCoordinatorService; transactions: TransactionCoordinatorService; followLeadership: () => void } {
    const replicaManager = dataPath.services.replicaManager;
    const onError = (component: string) => (err: unknown, what: string) => this.logger.error({ err }, `${component}: ${what} failed`);
    const groups = new GroupCoordinatorService({
      nodeId: this.nodeId,
      config: groupCoordinatorConfig(this.config),
      clock: this.runtime.clock,
      random: this.runtime.random,
      access: coordinatorTopicAccess(offsetsTopicSpec(this.config), this.metadata, replicaManager, createTopics),
      onError: onError('group coordinator'),
      logger: this.logger.child({ component: 'group-coordinator' }),
      maxConcurrentLoads: this.config.getInt('offsets.load.max.partitions'),
    });
    this.groups = groups;
    groups.start();
    const interBroker = this.interBrokerChannel();
    const transactions = new TransactionCoordinatorService({
      nodeId: this.nodeId,
      config: transactionCoordinatorConfig(this.config),
      clock: this.runtime.clock,
      access: coordinatorTopicAccess(transactionStateTopicSpec(this.config), this.metadata, replicaManager, createTopics),
      producerIds: dataPath.services.producerIds,
      markers: new TxnMarkerChannel(
        {
          leaderOf: (topic, partition) => this.metadata.image().partition(topic, partition)?.leader,
          // Markers for partitions this broker leads need no socket.
          send: (brokerId, request) =>
            brokerId === this.nodeId
              ? handleWriteTxnMarkers(dataPath.services, groups.coordinator, request, { client: 'local', logger: this.logger })
              : interBroker.send(brokerId, ApiKey.WriteTxnMarkers, request),
        },
        this.runtime.clock,
        onError('transaction marker channel'),
      ),
      onError: onError('transaction coordinator'),
      logger: this.logger.child({ component: 'transaction-coordinator' }),
      // As for __consumer_offsets: the partitions that load at once.
      maxConcurrentLoads: this.config.getInt('offsets.load.max.partitions'),
    });
    this.transactions = transactions;
    transactions.start();
    this.transactionVerifier = new TransactionVerifier({
      nodeId: this.nodeId,
      partitionFor: (transactionalId) => transactions.coordinator.partitionFor(transactionalId),
      coordinatorLeader: (partition) => this.metadata.image().partition(TRANSACTION_STATE_TOPIC, partition)?.leader,
      verifyLocally: (transactionalId, producerId, producerEpoch, partitions) =>
        transactions.coordinator.verifyPartitions(transactionalId, producerId, producerEpoch, partitions),
      channel: interBroker,
    });
    const coordinatorTopics = [
      {
        topic: OFFSETS_TOPIC,
        partitions: this.config.getInt('offsets.topic.num.partitions'),
        follow: groups.onOffsetsPartitionLeadership.bind(groups),
      },
      {
        topic: TRANSACTION_STATE_TOPIC,
        partitions: this.config.getInt('transaction.state.log.num.partitions'),
        follow: transactions.onPartitionLeadership.bind(transactions),
      },
    ];
    // The ReplicaManager's view, not the newest image: a partition counts once its log is open.
    const followLeadership = () => {
      for (const { topic, partitions, follow } of coordinatorTopics) {
        for (let p = 0; p < partitions; p++) {
          const partition = replicaManager.getPartition(topic, p);
          follow(p, partition?.isLeader === true, partition?.leaderEpoch ?? -1);
        }
      }
    };
    // Only a delta that touches a coordinator topic can move its leadership: other deltas (a
    // CreateTopics storm) cost nothing here. Guarded: a failure is logged, never thrown.
    const isCoordinatorTopic = (name: string) => name === OFFSETS_TOPIC || name === TRANSACTION_STATE_TOPIC;
    this.metadata.onMetadataDelta((delta) => {
      const touches =
        delta.topicsDeleted.some((t) => isCoordinatorTopic(t.name)) || delta.partitionsChanged.some((c) => isCoordinatorTopic(c.topicName));
      // The wait starts a microtask later, once the delta reached every listener: the publisher
      // has queued it then, whatever order the listeners were registered in. Started before,
      // it could end before the delta is applied, and a coordinator would miss the leadership
      // it brings (a partition never loaded, or one it lost still served) until the next delta.
      if (touches)
        runGuarded(onError('coordinators'), 'following coordinator topic leadership', () =>
          Promise.resolve()
            .then(() => dataPath.publisher.whenIdle())
            .then(followLeadership),
        );
    });
    return { groups, transactions, followLeadership };
  }

  /**
   * Listeners as clients must reach them: `advertised.listeners` (else `listeners`), with a
   * configured port 0 replaced by the bound port and an empty host by the bind address.
   * Controller listeners are excluded.
   */
  advertisedListeners(): Listener[] {
    const bound = new Map(this.server.listeners.map((l) => [l.name, l]));
    return this.config.advertisedListeners.map((l) => {
      const b = bound.get(l.name);
      return {
        ...l,
        host: l.host === '' ? (b?.host ?? '127.0.0.1') : l.host,
        port: l.port === 0 && b !== undefined ? b.boundPort : l.port,
      };
    });
  }

  /**
   * The HTTP listener: /metrics, the health checks and the admin API. The admin API and the lag
   * sampler reach the cluster as any admin client does, through this node's inter-broker
   * listener, so that they show what clients see, wherever the partitions and groups live.
   */
  private async startHttp(http: HttpServer): Promise<void> {
    const metrics = this.metrics!;
    metrics.attach(this.metricsSource());
    http.route('GET', '/metrics', async (request) => {
      const openMetrics = (request.headers.accept ?? '').includes('application/openmetrics-text');
      const { contentType, body } = await metrics.exposition(openMetrics);
      return { status: 200, body, contentType };
    });
    http.route('GET', '/health/live', () => ({ status: 200, body: { status: 'live' } }));
    http.route('GET', '/health/ready', () =>
      this.state === 'running' ? { status: 200, body: { status: 'ready' } } : { status: 503, body: { status: this.state } },
    );
    registerAdminApi(http, {
      cluster: () => this.ownAdminClient(),
      lagHistory: (groupId) => this.lagSampler?.history(groupId) ?? [],
      traffic: () => metrics.topicTraffic(),
    });
    registerConsole(http);
    await http.start(this.config.httpListeners);
  }

  private ownAdminClient(): KafkaCluster {
    if (this.adminClient === null) {
      const listener = this.advertisedListeners().find((l) => l.name === this.config.interBrokerListenerName);
      if (listener === undefined || this.state !== 'running') throw new Error('the node does not serve clients yet');
      this.adminClient = new KafkaCluster([`${listener.host}:${listener.port}`], {
        clientId: `sluice-admin-${this.nodeId}`,
        ...interBrokerClientSecurity(this.config),
      });
    }
    return this.adminClient;
  }

  private startLagSampler(groups: GroupCoordinatorService): void {
    if (this.http === null) return;
    this.lagSampler = new ConsumerLagSampler({
      groups: () => groups.coordinator.listGroups(null).map((g) => g.groupId),
      describe: async (groupId) => (await describeGroup(this.ownAdminClient(), groupId, this.runtime.clock.now())).partitions,
      clock: this.runtime.clock,
      intervalMs: this.config.getLong('metrics.lag.sample.interval.ms'),
      historyMs: this.config.getLong('metrics.lag.history.ms'),
      onError: (err, what) => this.logger.warn({ err }, `${what} failed`),
    });
    this.lagSampler.start();
  }

  /** What /metrics reads when scraped. */
  private metricsSource(): MetricsSource {
    return {
      topicExists: (topic) => this.metadata.image().topic(topic) !== undefined,
      partitionStates: () => {
        const counts = { online: 0, offline: 0, underReplicated: 0, underMinIsr: 0 };
        for (const p of this.replicaManager?.allPartitions() ?? []) {
          if (p.offline) {
            counts.offline++;
            continue;
          }
          counts.online++;
          if (!p.isLeader) continue;
          if (p.isr.length < p.replicas.length) counts.underReplicated++;
          if (p.isUnderMinIsr) counts.underMinIsr++;
        }
        // Partitions without a leader are the active controller's to report, as Kafka's OfflinePartitionsCount.
        if (this.metadata.isActiveController()) {
          for (const topic of this.metadata.image().topicsByName.values()) {
            for (const partition of topic.partitions.values()) if (partition.leader < 0) counts.offline++;
          }
        }
        return counts;
      },
      hostedPartitions: () =>
        [...(this.replicaManager?.allPartitions() ?? [])]
          .filter((p) => !p.offline)
          .map((p) => ({
            topic: p.topic,
            partition: p.partition,
            logEndOffset: p.logEndOffset,
            highWatermark: p.highWatermark,
            sizeBytes: p.log.sizeInBytes,
          })),
      connectionsByListener: () => {
        const counts = new Map(this.config.listeners.map((l) => [l.name, 0]));
        for (const c of this.server.openConnections) counts.set(c.session.listenerName, (counts.get(c.session.listenerName) ?? 0) + 1);
        return counts;
      },
      groups: () => {
        const coordinator = this.groups?.coordinator;
        if (coordinator === undefined) return [];
        return coordinator.listGroups(null).map((g) => ({
          group: g.groupId,
          state: g.state,
          members: coordinator.group(g.groupId)?.allMembers().length ?? 0,
        }));
      },
      groupLag: () => this.lagSampler?.points() ?? [],
      raft: () => {
        const raft = this.metadata.raftClientIfStarted;
        return raft === null ? null : { leaderId: raft.currentLeaderId, commitOffset: raft.highWatermarkOffset };
      },
      nowMs: () => this.runtime.clock.now(),
    };
  }

  /** Graceful shutdown; safe to call more than once. */
  async close(): Promise<void> {
    if (this.state === 'closing' || this.state === 'closed') return;
    this.state = 'closing';
    this.logger.info('shutting down');
    for (const watch of this.keystoreWatches) watch.stop();
    if (this.http !== null) {
      this.lagSampler?.stop();
      await this.http.close();
      await this.adminClient?.close();
    }
    // Controlled shutdown first, while this node still serves its followers: the controller
    // moves leadership away so that clients fail over before the listeners close. Past a
    // session timeout the controller fences the node anyway, so waiting longer buys nothing.
    if (this.lifecycle !== null) {
      await this.lifecycle
        .controlledShutdown(this.config.getInt('broker.session.timeout.ms'))
        .catch((err: unknown) => this.logger.warn({ err }, 'controlled shutdown did not complete'));
    }
    // Stop accepting and reading first; then complete parked fetches and produces so that
    // requests in progress (a long-poll fetch) answer now instead of holding shutdown.
    const connectionsClosed = this.server.close();
    this.groups?.shutdown();
    this.transactions?.shutdown();
    this.interBroker?.close();
    await this.dataPath?.close();
    await connectionsClosed;
    // The partition logs and the metadata log are separate files: they flush at once. Both
    // close even when the other fails; the first failure is thrown.
    // The clean-shutdown marker carries the epoch of the registration that ends (KIP-966).
    const brokerEpoch = this.lifecycle?.brokerEpoch ?? -1n;
    await this.lifecycle?.close();
    this.images?.close();
    await Promise.all(this.channels.map((c) => c.close()));
    const closed = await Promise.allSettled([this.logManager?.shutdown(brokerEpoch), this.metadata.close()]);
    for (const c of closed) if (c.status === 'rejected') throw c.reason;
    this.state = 'closed';
    this.logger.info('shut down');
  }
}
