// MetadataManager: one node's share of the KRaft-style metadata quorum. It opens the Raft
// log in `<metadata.log.dir>/__cluster_metadata-0`, runs the Raft client, applies committed
// records to the MetadataImage (publishing deltas to the ReplicaManager and to dynamic
// broker configs), snapshots the image, and hosts the controller when this node leads.
//
// A node votes only when controller.quorum.voters lists it (a node with the controller role
// must be listed): a broker-only node is a Raft observer that follows the log of the leader
// it finds through the voters, or through controller.quorum.bootstrap.servers when it lists
// none. It never votes, never stands for election and so never hosts the active controller.

import { join } from 'node:path';
import { createDirectory } from '../../storage/checkpoint.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import type { Logger } from '../observability/logger.ts';
import { guarded, type FailureSink } from '../runtime/guard.ts';
import { loadOrFormatMetaProperties } from './meta-properties.ts';
import { QuorumController } from './controller.ts';
import type { MetadataImage } from './image.ts';
import { MetadataLoader, encodeSnapshot, type MetadataDeltaListener } from './loader.ts';
import { encodeMetadataRecord } from './record-codec.ts';
import type { MetadataRecord } from './records.ts';
import { ConfigResourceType } from './records.ts';
import { RaftClient, raftTimingOf } from './raft/client.ts';
import { FileRaftLog, METADATA_PARTITION_DIR } from './raft/file-log.ts';
import type { RaftLog } from './raft/log.ts';
import { KafkaRaftTransport, bootstrapServerId } from './raft/kafka-transport.ts';
import { FileQuorumStateStore } from './raft/quorum-state.ts';
import { raftMembershipOf } from './raft/voter-set.ts';
import type { RaftTransport } from './raft/types.ts';
import { repeat, type Clock } from '../runtime/clock.ts';
import { systemRuntime, type Runtime } from '../runtime/index.ts';
import { controllerClientSecurity } from '../security/listener-security.ts';
import { readBootstrapRecords } from './bootstrap-records.ts';

/** SecurityProtocol ids as RegisterBrokerRecord stores them. */
export const SECURITY_PROTOCOL_ID: Readonly<Record<string, number>> = {
  PLAINTEXT: 0,
  SSL: 1,
  SASL_PLAINTEXT: 2,
  SASL_SSL: 3,
};

export interface MetadataManagerOptions {
  config: BrokerConfig;
  logger: Logger;
  /**
   * Carries Raft RPCs to other voters; defaults to Kafka RPCs to controller.quorum.voters (and
   * to controller.quorum.bootstrap.servers as bootstrapServerId(i)).
   */
  transport?: RaftTransport;
  /** Time, timers, randomness and the network of the quorum; defaults to the system's. */
  runtime?: Runtime;
}

export class MetadataManager {
  readonly nodeId: number;
  /** The voter ids; this node is an observer when it is not among them. */
  readonly voters: number[];
  /** Where this node, as an observer, looks for the leader: the voters, else the bootstrap servers. */
  private readonly bootstrapIds: number[];
  private readonly config: BrokerConfig;
  private readonly logger: Logger;
  readonly runtime: Runtime;
  private readonly clock: Clock;
  private readonly transport: RaftTransport;
  private readonly loader: MetadataLoader;
  private raftClient: RaftClient | null = null;
  private raftLog: RaftLog | null = null;
  private cluster = '';
  private dirIds: ReadonlyMap<string, string> = new Map();
  private stopSnapshots: (() => void) | null = null;
  private readonly ownTransport: KafkaRaftTransport | null;
  private readonly appliedBrokerConfigs = new Map<'cluster' | 'broker', Set<string>>();
  /** The controller's activation for the Raft epoch this node leads, if it leads one. */
  private activation: Promise<void> = Promise.resolve();
  readonly controller: QuorumController;

  constructor(options: MetadataManagerOptions) {
    this.config = options.config;
    this.logger = options.logger;
    this.nodeId = options.config.nodeId;
    const voters = options.config.quorumVoters.map((v) => v.nodeId);
    // Only a config without process.roles (a library default, not a KRaft node) and without
    // voters is a quorum of itself; config validation makes every controller a listed voter.
    this.voters = voters.length === 0 && options.config.processRoles.length === 0 ? [this.nodeId] : voters;
    const bootstrapServers = options.config.quorumBootstrapServers;
    this.bootstrapIds = this.voters.length > 0 ? this.voters : bootstrapServers.map((_, i) => bootstrapServerId(i));
    this.runtime = options.runtime ?? systemRuntime;
    this.clock = this.runtime.clock;
    if (options.transport === undefined) {
      const own = new KafkaRaftTransport(
        options.config.quorumVoters,
        () => this.cluster,
        {
          clientId: `raft-client-${this.nodeId}`,
          requestTimeoutMs: options.config.getInt('controller.quorum.request.timeout.ms'),
          network: this.runtime.network,
          clock: this.clock,
          ...controllerClientSecurity(options.config),
        },
        bootstrapServers,
      );
      this.ownTransport = own;
      this.transport = own;
    } else {
      this.ownTransport = null;
      this.transport = options.transport;
    }
    this.loader = new MetadataLoader({
      maxUnsnapshottedBytes: this.config.getLong('metadata.log.max.record.bytes.between.snapshots'),
      onSnapshotDue: (image) => this.snapshot(image),
      onLeaderChange: (leaderId, epoch) => {
        this.logger.info({ leaderId, epoch }, 'metadata quorum leader changed');
        this.onLeaderChange(leaderId);
      },
      clock: this.clock,
    });
    this.loader.onMetadataDelta((delta, image) => {
      for (const name of delta.brokerConfigsChanged) this.applyBrokerConfigs(image, name);
    });
    const onFailure: FailureSink = (err, what) => this.logger.error({ err }, `${what} failed`);
    this.controller = new QuorumController(
      {
        isActive: () => this.raftClient?.isLeader() ?? false,
        image: () => this.loader.image,
        nextWriteOffset: () => this.raft.logEndOffset,
        write: (records) => this.write(records),
      },
      {
        defaultNumPartitions: () => this.config.getInt('num.partitions'),
        defaultReplicationFactor: () => this.config.getInt('default.replication.factor'),
        brokerSessionTimeoutMs: () => this.config.getInt('broker.session.timeout.ms'),
        uncleanLeaderElectionEnable: () => this.config.getBoolean('unclean.leader.election.enable'),
        minInsyncReplicas: () => this.config.getInt('min.insync.replicas'),
        clusterId: () => this.cluster,
        autoLeaderRebalanceEnable: () => this.config.getBoolean('auto.leader.rebalance.enable'),
        leaderImbalanceCheckIntervalMs: () => this.config.getLong('leader.imbalance.check.interval.seconds') * 1000,
      },
      undefined,
      { clock: guardedTimers(this.clock, onFailure), random: this.runtime.random, onFailure },
    );
  }

  /**
   * The Raft leader is the active controller: it activates on becoming leader (with three
   * voters that is an election well after start) and stops its broker sessions when another
   * node leads.
   */
  private onLeaderChange(leaderId: number): void {
    if (leaderId !== this.nodeId) {
      this.controller.deactivate();
      return;
    }
    this.activation = this.controller.activate().catch((err: unknown) => {
      this.logger.error({ err }, 'controller activation failed');
    });
  }

  get raft(): RaftClient {
    if (this.raftClient === null) throw new Error('metadata manager not started');
    return this.raftClient;
  }

  /** The Raft client, null before start(): for read-only inspection (the simulation's checks). */
  get raftClientIfStarted(): RaftClient | null {
    return this.raftClient;
  }

  /** The metadata log, null until start() opened it: for read-only inspection. */
  get raftLogIfOpen(): RaftLog | null {
    return this.raftLog;
  }

  /** The directory.id (KIP-858) of each log dir and of the metadata log dir, by the path as configured; known once started. */
  get directoryIds(): ReadonlyMap<string, string> {
    return this.dirIds;
  }

  get clusterId(): string {
    return this.cluster;
  }

  /** The current image: what every handler reads. */
  image(): MetadataImage {
    return this.loader.image;
  }

  /** Called with every committed change, after the image is updated. */
  onMetadataDelta(listener: MetadataDeltaListener): void {
    this.loader.onMetadataDelta(listener);
  }

  /** Raft leader = active controller; -1 while an election runs. */
  activeControllerId(): number {
    return this.raftClient?.currentLeaderId ?? -1;
  }

  isActiveController(): boolean {
    return this.raftClient?.isLeader() ?? false;
  }

  /** Opens the log, replays snapshot + log and joins the quorum. */
  async start(): Promise<void> {
    const baseDir = this.config.metadataLogDir;
    const fileSystem = this.runtime.fileSystem;
    await createDirectory(fileSystem, baseDir, !this.config.getBoolean('unsafe.bypass.fsync'));
    const dir = join(baseDir, METADATA_PARTITION_DIR);
    // Independent files: read (or created) at once. The log is kept (close() closes it) even
    // when the cluster id fails.
    const [cluster, raftLog] = await Promise.allSettled([
      loadOrFormatMetaProperties(this.config, this.logger, { random: this.runtime.random, fileSystem }),
      FileRaftLog.open({
        dir,
        segmentBytes: this.config.getInt('metadata.log.segment.bytes'),
        onBackgroundError: (err, what) => this.logger.error({ err }, `metadata log: ${what} failed`),
        unsafeBypassFsync: this.config.getBoolean('unsafe.bypass.fsync'),
        fileSystem,
        clock: this.runtime.clock,
      }),
    ]);
    if (raftLog.status === 'rejected') throw raftLog.reason;
    this.raftLog = raftLog.value;
    this.controller.setFormatRecords(await readBootstrapRecords(baseDir, fileSystem));
    if (cluster.status === 'rejected') throw cluster.reason;
    this.cluster = cluster.value.clusterId;
    this.dirIds = cluster.value.directoryIds;
    // KIP-853: the voter set goes into the log, keyed by the metadata log directory's id.
    const membership = raftMembershipOf(this.config, cluster.value.directoryIds.get(this.config.metadataLogDir));
    this.raftClient = new RaftClient(
      {
        ...raftTimingOf(this.config),
        ...membership,
        nodeId: this.nodeId,
        voters: this.voters,
        bootstrapIds: this.bootstrapIds,
        clusterId: this.cluster,
      },
      raftLog.value,
      new FileQuorumStateStore(dir, this.config.getBoolean('unsafe.bypass.fsync'), fileSystem),
      this.transport,
      this.loader,
      guardedTimers(this.clock, (err, what) => this.logger.error({ err }, `${what} failed`)),
      () => this.runtime.random.next(),
    );
    this.raftClient.start();
    const intervalMs = this.config.getLong('metadata.log.max.snapshot.interval.ms');
    if (intervalMs > 0) {
      this.stopSnapshots = repeat(
        this.clock,
        intervalMs,
        guarded(
          (err, what) => this.logger.error({ err }, `${what} failed`),
          'periodic metadata snapshot',
          () => {
            if (this.loader.unsnapshottedBytes > 0) this.snapshot(this.loader.image);
          },
        ),
      );
    }
    // A node that leads from the start (a single voter) answers nothing before its controller
    // has replayed the log and bootstrapped an empty one.
    if (this.raftClient.isLeader()) await this.activation;
    this.logger.info(
      { clusterId: this.cluster, epoch: this.raftClient.currentEpoch, topics: this.loader.image.topicsByName.size },
      'metadata log loaded',
    );
  }

  private async write(records: MetadataRecord[]): Promise<void> {
    await this.raft.append(records.map(encodeMetadataRecord));
    await this.loader.whenPublished();
  }

  private snapshot(image: MetadataImage): void {
    const raft = this.raftClient;
    if (raft === null || image.offset < 0 || image.offset + 1 > raft.highWatermarkOffset) return;
    const id = raft.createSnapshot(image.offset + 1, encodeSnapshot(image, this.clock.now()));
    this.loader.snapshotTaken();
    this.logger.info({ endOffset: id.endOffset, epoch: id.epoch }, 'wrote metadata snapshot');
  }

  private applyBrokerConfigs(image: MetadataImage, resourceName: string): void {
    if (resourceName !== '' && resourceName !== String(this.nodeId)) return;
    const scope = resourceName === '' ? 'cluster' : 'broker';
    const configs = image.resourceConfigs(ConfigResourceType.BROKER, resourceName);
    const applied = this.appliedBrokerConfigs.get(scope) ?? new Set<string>();
    for (const name of applied) {
      if (!configs.has(name)) this.config.setDynamic(name, null, scope);
    }
    this.appliedBrokerConfigs.set(scope, new Set(configs.keys()));
    for (const [name, value] of configs) {
      try {
        this.config.setDynamic(name, value, scope);
      } catch (err) {
        this.logger.warn({ config: name, err: (err as Error).message }, 'ignoring dynamic broker config');
      }
    }
  }

  /** Hands leadership over (EndQuorumEpoch) and closes the log. */
  async close(): Promise<void> {
    this.stopSnapshots?.();
    this.controller.deactivate();
    await this.raftClient?.close();
    await this.ownTransport?.close();
    await this.raftLog?.close();
  }
}

/** The Raft client's timers (elections, fetch timeouts, check quorum), each run guarded. */
function guardedTimers(clock: Clock, onFailure: FailureSink): Clock {
  return {
    now: () => clock.now(),
    monotonicMs: () => clock.monotonicMs(),
    setTimeout: (fn, delayMs) => clock.setTimeout(guarded(onFailure, 'metadata quorum timer', fn), delayMs),
    clearTimeout: (handle) => clock.clearTimeout(handle),
    setImmediate: (fn) => clock.setImmediate(guarded(onFailure, 'metadata quorum task', fn)),
  };
}
