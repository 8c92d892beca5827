/**
 * Several ReplicaManagers over temp-dir logs, wired as a cluster without sockets: each
 * follower's fetcher reaches its leader's Fetch and ListOffsets handlers through a fake
 * transport (requests and responses go through the codec at the version used, as on the
 * wire), ISR changes go to a fake controller, and partition states are applied to every
 * replica as the metadata publisher would. One fake clock drives every timer.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Errors } from '../../../protocol/errors.ts';
import {
  makeAlterPartitionResponse,
  makeAlterPartitionResponsePartitionData,
  makeAlterPartitionResponseTopicData,
} from '../../../protocol/messages/alter-partition.ts';
import { ApiKey, apis, type ApiRequest, type ApiResponse } from '../../../protocol/messages/index.ts';
import { Reader, Writer } from '../../../protocol/primitives.ts';
import { buildRecordBatch, type RecordBatchOptions } from '../../../protocol/records/builder.ts';
import { LogManager } from '../../../storage/log-manager.ts';
import { topicConfigLookup } from '../../../src/config/topic-config.ts';
import { handleFetch } from '../../../src/handlers/fetch.ts';
import { handleListOffsets } from '../../../src/handlers/list-offsets.ts';
import { FetchSessionCache } from '../../../src/replication/fetch-session.ts';
import type { ReplicaApiKey, ReplicaTransport } from '../../../src/replication/fetcher.ts';
import type { AlterPartitionRequest, AlterPartitionResponse } from '../../../src/replication/isr-manager.ts';
import type { PartitionState } from '../../../src/replication/partition.ts';
import { ReplicaManager } from '../../../src/replication/replica-manager.ts';
import { LogManagerProvider } from '../../../src/replication/storage-adapter.ts';
import { BackgroundErrors, logConfig } from '../../helpers/storage.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

export const TOPIC = 't';
export const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';
export const LAG_MS = 10_000;
export const BACKOFF_MS = 1_000;
export const MAX_WAIT_MS = 500;

/** Polls (in real time) until `check` holds; the fake clock does not move meanwhile. */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Moves the fake clock in steps, letting the replicas react between steps (a fetcher
 * schedules its backoff only once its failure is handled), until `check` holds.
 */
export async function advanceUntil(
  clock: ManualClock,
  what: string,
  check: () => boolean | Promise<boolean>,
  stepMs = 100,
  maxMs = 120_000,
): Promise<void> {
  for (let moved = 0; moved <= maxMs; moved += stepMs) {
    await settle(5);
    if (await check()) return;
    clock.advance(stepMs);
  }
  throw new Error(`${what} did not happen within ${maxMs} ms of fake time`);
}

/** Lets pending I/O and promise chains run without moving the fake clock. */
export async function settle(ms = 30): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

export function records(n: number, options: RecordBatchOptions = {}, tag = 'v'): Promise<Buffer> {
  return buildRecordBatch(
    options,
    Array.from({ length: n }, (_, i) => ({
      key: Buffer.from(`k${i}`),
      value: Buffer.from(`${tag}-${i}`),
      timestamp: 1_700_000_000_000 + i,
    })),
  );
}

function roundTrip<T>(encode: (w: Writer, m: T, v: number) => void, decode: (r: Reader, v: number) => T, message: T, version: number): T {
  const w = new Writer();
  encode(w, message, version);
  return decode(new Reader(w.toBuffer()), version);
}

export interface TestBroker {
  readonly id: number;
  readonly dir: string;
  readonly logs: LogManager;
  readonly rm: ReplicaManager;
  readonly errors: unknown[];
}

/** A partition's state as the fake controller keeps it. */
interface ControllerPartition {
  leaderId: number;
  leaderEpoch: number;
  partitionEpoch: number;
  replicas: number[];
  isr: number[];
}

export interface ClusterOptions {
  readonly topicConfig?: Record<string, string>;
  /** The highest Fetch version the fake transports speak (the codec's when absent). */
  readonly maxFetchVersion?: number;
  /** The fake controller holds AlterPartition answers until `releaseAlterPartition`. */
  readonly holdAlterPartition?: boolean;
}

export class TestCluster {
  readonly clock = new ManualClock();
  readonly brokers = new Map<number, TestBroker>();
  readonly alterPartitionRequests: AlterPartitionRequest[] = [];
  /** Links refused (follower -> leader), and the open transports to close when a link is cut. */
  private readonly blocked = new Set<string>();
  private readonly transports = new Set<FakeTransport>();
  private readonly held: (() => void)[] = [];
  private readonly controller = new Map<number, ControllerPartition>();
  /** Answer the next AlterPartition requests with this error code instead of applying them. */
  alterPartitionError: number | null = null;
  connectAttempts = 0;

  constructor(readonly options: ClusterOptions = {}) {}

  async addBroker(id: number): Promise<TestBroker> {
    const dir = await mkdtemp(join(tmpdir(), `sluice-repl-${id}-`));
    const errors: unknown[] = [];
    const logs = await LogManager.startup({ logDirs: [dir], defaultConfig: logConfig(), onBackgroundError: new BackgroundErrors().sink });
    const rm = new ReplicaManager({
      brokerId: id,
      logs: new LogManagerProvider(logs),
      clock: this.clock,
      replicaLagTimeMaxMs: LAG_MS,
      brokerEpoch: () => BigInt(100 + id),
      brokerRegistration: (brokerId) => ({ epoch: BigInt(100 + brokerId), fenced: false, inControlledShutdown: false }),
      partitionExists: (topic, partition) => topic === TOPIC && this.controller.has(partition),
      metadataLeader: (_topic, partition) => {
        const p = this.controller.get(partition);
        return p === undefined ? undefined : { leaderId: p.leaderId, leaderEpoch: p.leaderEpoch };
      },
      alterPartition: (request) => this.alterPartition(request),
      replicaFetcher: {
        connect: (leaderId) => this.connect(id, leaderId),
        settings: { maxWaitMs: MAX_WAIT_MS, minBytes: 1, maxBytes: 1 << 20, responseMaxBytes: 10 << 20, backoffMs: BACKOFF_MS },
      },
      onReplicationError: (err) => errors.push(err),
    });
    rm.startup();
    const broker = { id, dir, logs, rm, errors };
    this.brokers.set(id, broker);
    return broker;
  }

  broker(id: number): TestBroker {
    const b = this.brokers.get(id);
    if (b === undefined) throw new Error(`no broker ${id}`);
    return b;
  }

  partition(brokerId: number, partition = 0) {
    const p = this.broker(brokerId).rm.getPartition(TOPIC, partition);
    if (p === undefined) throw new Error(`broker ${brokerId} does not host ${TOPIC}-${partition}`);
    return p;
  }

  /** The controller's state of a partition. */
  state(partition = 0): ControllerPartition {
    const p = this.controller.get(partition);
    if (p === undefined) throw new Error(`no partition ${partition}`);
    return p;
  }

  /** Sets a partition's state in the controller and applies it to every replica (metadata). */
  async setState(state: Partial<ControllerPartition> & { replicas?: number[] }, partition = 0, only?: readonly number[]): Promise<void> {
    const current = this.controller.get(partition);
    const next: ControllerPartition = {
      leaderId: state.leaderId ?? current?.leaderId ?? -1,
      leaderEpoch: state.leaderEpoch ?? current?.leaderEpoch ?? 0,
      partitionEpoch: state.partitionEpoch ?? (current === undefined ? 0 : current.partitionEpoch + 1),
      replicas: state.replicas ?? current?.replicas ?? [],
      isr: state.isr ?? current?.isr ?? [],
    };
    this.controller.set(partition, next);
    await this.publish(partition, only);
  }

  /** Applies the controller's state to the replicas (all, or `only` these). */
  async publish(partition = 0, only?: readonly number[]): Promise<void> {
    const s = this.state(partition);
    const config = topicConfigLookup(this.options.topicConfig ?? {});
    for (const id of only ?? s.replicas) {
      const broker = this.brokers.get(id);
      if (broker !== undefined) await broker.rm.applyPartitionState(this.partitionState(partition), config);
    }
  }

  partitionState(partition = 0): PartitionState {
    const s = this.state(partition);
    return { topic: TOPIC, topicId: TOPIC_ID, partition, ...s };
  }

  produce(brokerId: number, batch: Buffer, acks = -1, timeoutMs = 30_000, partition = 0) {
    return this.broker(brokerId).rm.appendRecords({
      acks,
      timeoutMs,
      produceVersion: 9,
      entries: [{ topic: TOPIC, partition, records: Buffer.from(batch) }],
    });
  }

  /** Cuts the link from a follower to a leader: open transports fail, new ones are refused. */
  block(followerId: number, leaderId: number): void {
    this.blocked.add(`${followerId}->${leaderId}`);
    for (const t of this.transports) if (t.followerId === followerId && t.leaderId === leaderId) t.close();
  }

  unblock(followerId: number, leaderId: number): void {
    this.blocked.delete(`${followerId}->${leaderId}`);
  }

  isBlocked(followerId: number, leaderId: number): boolean {
    return this.blocked.has(`${followerId}->${leaderId}`);
  }

  releaseAlterPartition(): void {
    for (const release of this.held.splice(0)) release();
  }

  get heldAlterPartitions(): number {
    return this.held.length;
  }

  private async connect(followerId: number, leaderId: number): Promise<ReplicaTransport> {
    this.connectAttempts++;
    const leader = this.brokers.get(leaderId);
    if (leader === undefined || this.isBlocked(followerId, leaderId)) throw new Error(`broker ${leaderId}: connection refused`);
    const transport = new FakeTransport(this, followerId, leader, this.options.maxFetchVersion);
    this.transports.add(transport);
    return transport;
  }

  forget(transport: FakeTransport): void {
    this.transports.delete(transport);
  }

  /**
   * The fake controller (QuorumController.alterPartition in brief): the leader and partition
   * epochs must match; the new ISR is committed with the partition epoch bumped, answered,
   * and then published to the replicas as a metadata delta would be.
   */
  private async alterPartition(request: AlterPartitionRequest): Promise<AlterPartitionResponse> {
    this.alterPartitionRequests.push(request);
    if (this.options.holdAlterPartition === true) await new Promise<void>((resolve) => this.held.push(resolve));
    const published: number[] = [];
    const topics = request.topics.map((topic) =>
      makeAlterPartitionResponseTopicData({
        topicId: topic.topicId,
        partitions: topic.partitions.map((p) => {
          const s = this.controller.get(p.partitionIndex);
          const error = (code: number) => makeAlterPartitionResponsePartitionData({ partitionIndex: p.partitionIndex, errorCode: code });
          if (s === undefined) return error(Errors.UNKNOWN_TOPIC_ID.code);
          if (this.alterPartitionError !== null) return error(this.alterPartitionError);
          if (p.leaderEpoch !== s.leaderEpoch) return error(Errors.FENCED_LEADER_EPOCH.code);
          if (p.partitionEpoch !== s.partitionEpoch) return error(Errors.INVALID_UPDATE_VERSION.code);
          s.isr = p.newIsrWithEpochs.map((b) => b.brokerId);
          s.partitionEpoch++;
          published.push(p.partitionIndex);
          return makeAlterPartitionResponsePartitionData({
            partitionIndex: p.partitionIndex,
            leaderId: s.leaderId,
            leaderEpoch: s.leaderEpoch,
            isr: [...s.isr],
            partitionEpoch: s.partitionEpoch,
          });
        }),
      }),
    );
    const response = makeAlterPartitionResponse({ topics });
    // The metadata follows the answer, as the controller's committed record reaches brokers later.
    setImmediate(() => {
      for (const partition of published) void this.publish(partition);
    });
    return roundTrip(
      apis.get(ApiKey.AlterPartition)!.encodeResponse,
      apis.get(ApiKey.AlterPartition)!.decodeResponse,
      response,
      3,
    ) as AlterPartitionResponse;
  }

  async close(): Promise<void> {
    this.releaseAlterPartition();
    for (const broker of this.brokers.values()) await broker.rm.shutdownReplication();
    for (const t of [...this.transports]) t.close();
    for (const broker of this.brokers.values()) {
      await broker.rm.flushPendingAppends();
      broker.rm.shutdown();
      await broker.logs.shutdown();
      await rm(broker.dir, { recursive: true, force: true });
    }
  }
}

/** The leader's handlers behind a connection that can be cut (pending requests then fail). */
class FakeTransport implements ReplicaTransport {
  closed = false;
  private readonly pending = new Set<(err: Error) => void>();
  private readonly services;

  constructor(
    private readonly cluster: TestCluster,
    readonly followerId: number,
    private readonly leader: TestBroker,
    private readonly maxFetchVersion: number | undefined,
  ) {
    this.services = {
      replicaManager: leader.rm,
      fetchSessions: new FetchSessionCache({ clock: cluster.clock }),
      topicNameOf: (id: string) => (id === TOPIC_ID ? TOPIC : undefined),
      topicIdOf: (name: string) => (name === TOPIC ? TOPIC_ID : undefined),
      fetchMaxBytes: () => 50 << 20,
      requestTimeoutMs: () => 30_000,
    };
  }

  get leaderId(): number {
    return this.leader.id;
  }

  version(apiKey: ReplicaApiKey): number {
    const max = apis.get(apiKey)!.maxVersion;
    return apiKey === ApiKey.Fetch && this.maxFetchVersion !== undefined ? Math.min(max, this.maxFetchVersion) : max;
  }

  send<K extends ReplicaApiKey>(apiKey: K, request: ApiRequest<K>, version: number): Promise<ApiResponse<K>> {
    if (this.closed) return Promise.reject(new Error('connection closed'));
    const api = apis.get(apiKey)!;
    const decoded = roundTrip(api.encodeRequest, api.decodeRequest, request, version);
    return new Promise<ApiResponse<K>>((resolve, reject) => {
      this.pending.add(reject);
      const handled =
        apiKey === ApiKey.Fetch
          ? handleFetch(this.services, decoded as ApiRequest<ApiKey.Fetch>, version, 'PLAINTEXT')
          : handleListOffsets(this.services, decoded as ApiRequest<ApiKey.ListOffsets>, version);
      (handled as Promise<unknown>).then(
        (response) => {
          this.pending.delete(reject);
          if (this.closed) return;
          resolve(roundTrip(api.encodeResponse, api.decodeResponse, response, version) as ApiResponse<K>);
        },
        (err: Error) => {
          this.pending.delete(reject);
          reject(err);
        },
      );
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cluster.forget(this);
    for (const reject of this.pending) reject(new Error('connection closed'));
    this.pending.clear();
  }
}
