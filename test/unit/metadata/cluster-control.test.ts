import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import {
  makeAlterPartitionRequest,
  makeAlterPartitionRequestBrokerState,
  makeAlterPartitionRequestPartitionData,
  makeAlterPartitionRequestTopicData,
  type AlterPartitionResponsePartitionData,
} from '../../../protocol/messages/alter-partition.ts';
import { makeBrokerHeartbeatRequest, type BrokerHeartbeatRequest } from '../../../protocol/messages/broker-heartbeat.ts';
import { makeBrokerRegistrationRequest, type BrokerRegistrationRequest } from '../../../protocol/messages/broker-registration.ts';
import { ElectionType, QuorumController, randomUuid, type ControllerConfig } from '../../../src/metadata/controller.ts';
import type { PartitionImage } from '../../../src/metadata/image.ts';
import { ConfigResourceType } from '../../../src/metadata/records.ts';
import { FakeClock } from './fake-cluster.ts';
import { ImageSink } from './image-sink.ts';
import { brokerFeatures } from '../../helpers/broker-registration.ts';

const CLUSTER_ID = 'q7Jg3kPYQ1i2ZsQnMFvD2g';
const SESSION_MS = 9000;

/** Deterministic pseudo-random numbers, so placements repeat run to run. */
function seeded(seed = 7): () => number {
  let s = seed;
  return () => {
    s = (s * 16807) % 2147483647;
    return (s - 1) / 2147483646;
  };
}

class Cluster {
  readonly clock = new FakeClock();
  readonly sink = new ImageSink();
  readonly controller: QuorumController;
  readonly epochs = new Map<number, bigint>();
  readonly incarnations = new Map<number, string>();
  unclean = false;

  constructor(config: Partial<ControllerConfig> = {}) {
    this.controller = new QuorumController(
      this.sink,
      {
        defaultNumPartitions: () => 1,
        defaultReplicationFactor: () => 3,
        brokerSessionTimeoutMs: () => SESSION_MS,
        uncleanLeaderElectionEnable: () => this.unclean,
        clusterId: () => CLUSTER_ID,
        ...config,
      },
      seeded(),
      { clock: this.clock },
    );
  }

  register(brokerId: number, fields: Partial<BrokerRegistrationRequest> = {}) {
    const incarnationId = fields.incarnationId ?? this.incarnations.get(brokerId) ?? randomUuid();
    return this.controller
      .brokerRegistration(
        makeBrokerRegistrationRequest({
          brokerId,
          clusterId: CLUSTER_ID,
          incarnationId,
          listeners: [{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9000 + brokerId, securityProtocol: 0 }],
          features: brokerFeatures(),
          rack: null,
          ...fields,
        }),
      )
      .then((r) => {
        if (r.errorCode === Errors.NONE.code) {
          this.epochs.set(brokerId, r.brokerEpoch);
          this.incarnations.set(brokerId, incarnationId);
        }
        return r;
      });
  }

  /** A heartbeat of a broker that has applied everything so far. */
  heartbeat(brokerId: number, fields: Partial<BrokerHeartbeatRequest> = {}) {
    return this.controller.brokerHeartbeat(
      makeBrokerHeartbeatRequest({
        brokerId,
        brokerEpoch: this.epochs.get(brokerId) ?? -1n,
        currentMetadataOffset: BigInt(this.sink.current.offset),
        wantFence: false,
        ...fields,
      }),
    );
  }

  /** Registered and unfenced, as a broker's first heartbeats make it. */
  async start(ids: number[], racks: (string | null)[] = []): Promise<void> {
    await this.controller.activate();
    for (const [i, id] of ids.entries()) assert.equal((await this.register(id, { rack: racks[i] ?? null })).errorCode, 0);
    for (const id of ids) assert.equal((await this.heartbeat(id)).isFenced, false);
  }

  /** Moves time on in heartbeat-sized steps; `alive` brokers keep heartbeating. */
  async run(ms: number, alive: number[]): Promise<void> {
    for (let left = ms; left > 0; left -= 2000) {
      await this.clock.advance(Math.min(2000, left));
      for (const id of alive) await this.heartbeat(id);
    }
  }

  async createTopic(name: string, numPartitions: number, replicationFactor: number, configs: { name: string; value: string }[] = []) {
    const [r] = await this.controller.createTopics([{ name, numPartitions, replicationFactor, assignments: [], configs }], false);
    assert.equal(r!.errorCode, Errors.NONE.code, r!.errorMessage ?? '');
    return this.sink.current.topic(name)!;
  }

  async createManual(name: string, assignments: number[][], configs: Record<string, string> = {}) {
    const [r] = await this.controller.createTopics(
      [
        {
          name,
          numPartitions: -1,
          replicationFactor: -1,
          assignments: assignments.map((brokerIds, partitionIndex) => ({ partitionIndex, brokerIds })),
          configs: Object.entries(configs).map(([name, value]) => ({ name, value })),
        },
      ],
      false,
    );
    assert.equal(r!.errorCode, Errors.NONE.code, r!.errorMessage ?? '');
    return this.sink.current.topic(name)!;
  }

  partition(topic: string, id = 0): PartitionImage {
    return this.sink.current.partition(topic, id)!;
  }

  /** AlterPartition from the partition's leader with its current epochs, unless overridden. */
  async alterIsr(
    topic: string,
    newIsr: number[],
    fields: Partial<{ brokerId: number; brokerEpoch: bigint; leaderEpoch: number; partitionEpoch: number; version: number }> = {},
  ): Promise<{ errorCode: number; partition?: AlterPartitionResponsePartitionData }> {
    const p = this.partition(topic);
    const t = this.sink.current.topic(topic)!;
    const brokerId = fields.brokerId ?? p.leader;
    const version = fields.version ?? 3;
    const response = await this.controller.alterPartition(
      makeAlterPartitionRequest({
        brokerId,
        brokerEpoch: fields.brokerEpoch ?? this.epochs.get(brokerId) ?? -1n,
        topics: [
          makeAlterPartitionRequestTopicData({
            topicName: version <= 1 ? topic : '',
            topicId: version >= 2 ? t.id : 'AAAAAAAAAAAAAAAAAAAAAA',
            partitions: [
              makeAlterPartitionRequestPartitionData({
                partitionIndex: 0,
                leaderEpoch: fields.leaderEpoch ?? p.leaderEpoch,
                partitionEpoch: fields.partitionEpoch ?? p.partitionEpoch,
                newIsr: version < 3 ? newIsr : [],
                newIsrWithEpochs:
                  version >= 3
                    ? newIsr.map((id) => makeAlterPartitionRequestBrokerState({ brokerId: id, brokerEpoch: this.epochs.get(id) ?? -1n }))
                    : [],
              }),
            ],
          }),
        ],
      }),
      version,
    );
    return { errorCode: response.errorCode, partition: response.topics[0]?.partitions[0] };
  }
}

describe('cluster control: registration', () => {
  it('registers a broker fenced with its RegisterBrokerRecord offset as epoch', async () => {
    const c = new Cluster();
    await c.controller.activate();
    const next = c.sink.nextWriteOffset();
    const r = await c.register(1, { rack: 'r1' });
    assert.equal(r.errorCode, Errors.NONE.code);
    assert.equal(r.brokerEpoch, BigInt(next));
    const b = c.sink.current.brokers.get(1)!;
    assert.equal(b.fenced, true);
    assert.equal(b.epoch, r.brokerEpoch);
    assert.equal(b.rack, 'r1');
    assert.equal(b.endpoints[0]!.port, 9001);
  });

  it('refuses another incarnation while the registered one has a live session, and takes it after expiry', async () => {
    const c = new Cluster();
    await c.start([1]);
    const first = c.epochs.get(1)!;
    const dup = await c.register(1, { incarnationId: randomUuid() });
    assert.equal(dup.errorCode, Errors.DUPLICATE_BROKER_REGISTRATION.code);
    assert.equal(dup.brokerEpoch, -1n);
    // The first incarnation goes silent: its session expires and it is fenced.
    await c.clock.advance(SESSION_MS + 1);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, true);
    const again = await c.register(1, { incarnationId: randomUuid() });
    assert.equal(again.errorCode, Errors.NONE.code);
    assert.ok(again.brokerEpoch > first);
  });

  it('takes a new incarnation at once when the controller has not heard from the registered one since it became active', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    // A restart of the node hosting the controller: the controller comes back with the
    // registrations of the log and assumes every session live without having heard from any.
    c.controller.deactivate();
    await c.controller.activate();
    const restarted = await c.register(1, { incarnationId: randomUuid() });
    assert.equal(restarted.errorCode, Errors.NONE.code, 'node 1 came back: nothing proves its old incarnation alive');
    await c.heartbeat(2);
    const duplicate = await c.register(2, { incarnationId: randomUuid() });
    assert.equal(duplicate.errorCode, Errors.DUPLICATE_BROKER_REGISTRATION.code, 'node 2 heartbeated since: it is alive');
    assert.equal(c.sink.current.brokers.get(2)!.fenced, false, 'and keeps serving');
  });

  it('lets the same incarnation register again, keeping its epoch and state', async () => {
    const c = new Cluster();
    await c.start([1]);
    const epoch = c.epochs.get(1)!;
    const r = await c.register(1);
    assert.equal(r.errorCode, Errors.NONE.code);
    assert.equal(r.brokerEpoch, epoch);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, false);
  });

  it('refuses a wrong cluster id, an unsupported metadata.version and a ZK broker', async () => {
    const c = new Cluster();
    await c.controller.activate();
    assert.equal((await c.register(1, { clusterId: 'other' })).errorCode, Errors.INCONSISTENT_CLUSTER_ID.code);
    const old = await c.register(1, { features: [{ name: 'metadata.version', minSupportedVersion: 1, maxSupportedVersion: 7 }] });
    assert.equal(old.errorCode, Errors.UNSUPPORTED_VERSION.code);
    // No range sent: Kafka assumes the first KRaft metadata.version only.
    assert.equal((await c.register(1, { features: [] })).errorCode, Errors.UNSUPPORTED_VERSION.code);
    assert.equal((await c.register(1, { isMigratingZkBroker: true })).errorCode, Errors.BROKER_ID_NOT_REGISTERED.code);
    assert.equal(c.sink.current.brokers.size, 0);
  });

  it('answers NOT_CONTROLLER before activation and after resigning', async () => {
    const c = new Cluster();
    assert.equal((await c.register(1)).errorCode, Errors.NOT_CONTROLLER.code);
    await c.start([1]);
    c.controller.deactivate();
    assert.equal((await c.heartbeat(1)).errorCode, Errors.NOT_CONTROLLER.code);
    const alter = await c.controller.alterPartition(makeAlterPartitionRequest({ brokerId: 1, brokerEpoch: c.epochs.get(1)! }), 3);
    assert.equal(alter.errorCode, Errors.NOT_CONTROLLER.code);
    assert.equal((await c.controller.allocateProducerIds(1, c.epochs.get(1)!)).errorCode, Errors.NOT_CONTROLLER.code);
    const [topic] = await c.controller.createTopics(
      [{ name: 't', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      false,
    );
    assert.equal(topic!.errorCode, Errors.NOT_CONTROLLER.code);
  });
});

describe('cluster control: heartbeats and fencing', () => {
  it('unfences a broker once it has applied its own registration', async () => {
    const c = new Cluster();
    await c.controller.activate();
    await c.register(1);
    const epoch = c.epochs.get(1)!;
    const behind = await c.heartbeat(1, { currentMetadataOffset: epoch - 1n });
    assert.deepEqual([behind.errorCode, behind.isCaughtUp, behind.isFenced], [0, false, true]);
    const wantsFence = await c.heartbeat(1, { wantFence: true });
    assert.deepEqual([wantsFence.isCaughtUp, wantsFence.isFenced], [true, true]);
    const caughtUp = await c.heartbeat(1);
    assert.deepEqual([caughtUp.isCaughtUp, caughtUp.isFenced, caughtUp.shouldShutDown], [true, false, false]);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, false);
    assert.equal(c.sink.records().at(-1)!.type, 'BrokerRegistrationChangeRecord');
  });

  it('answers STALE_BROKER_EPOCH for an unknown broker or another epoch', async () => {
    const c = new Cluster();
    await c.start([1]);
    assert.equal((await c.heartbeat(2)).errorCode, Errors.STALE_BROKER_EPOCH.code);
    assert.equal((await c.heartbeat(1, { brokerEpoch: 12345n })).errorCode, Errors.STALE_BROKER_EPOCH.code);
  });

  it('fences a broker silent past broker.session.timeout.ms and elects a new leader from the live ISR', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createManual('t', [[1, 2, 3]]);
    const before = c.partition('t');
    assert.equal(before.leader, 1);
    await c.run(SESSION_MS - 1000, [1, 2, 3]);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, false, 'heartbeats keep the session');
    await c.run(SESSION_MS + 2000, [2, 3]);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, true);
    const after = c.partition('t');
    assert.equal(after.leader, 2);
    assert.deepEqual(after.isr, [2, 3]);
    assert.equal(after.leaderEpoch, before.leaderEpoch + 1);
    assert.equal(after.partitionEpoch, before.partitionEpoch + 1);
    assert.equal(c.sink.current.brokers.get(2)!.fenced, false);
  });

  it('moves leadership and ISR membership off an incarnation replaced before it was fenced (its successor may have lost data)', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createManual('t', [[1, 2, 3]]);
    const before = c.partition('t');
    assert.equal(before.leader, 1);
    c.controller.deactivate();
    await c.controller.activate();
    assert.equal((await c.register(1, { incarnationId: randomUuid() })).errorCode, Errors.NONE.code);
    const after = c.partition('t');
    assert.notEqual(after.leader, 1, 'the new process does not lead with a log an OS crash may have cut short');
    assert.ok(!after.isr.includes(1), 'it rejoins the ISR once it has caught up');
    assert.equal(after.leaderEpoch, before.leaderEpoch + 1);
  });

  it('times broker sessions on monotonic time: a wall clock stepped back does not keep a silent broker unfenced', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    const wall = c.clock.now.bind(c.clock);
    c.clock.now = () => wall() - 60_000;
    await c.run(SESSION_MS + 2000, [2, 3]);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, true);
  });

  it('fences one stale broker at a time, each election seeing the one before', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createManual('t', [[1, 2, 3]]);
    await c.run(SESSION_MS + 2000, [3]);
    const p = c.partition('t');
    assert.equal(p.leader, 3);
    assert.deepEqual(p.isr, [3]);
    const fences = c.sink.written.filter((batch) => batch.some((r) => r.type === 'BrokerRegistrationChangeRecord' && r.data.fenced === 1));
    assert.equal(fences.length, 2);
  });

  it('moves the last ISR member into the ELR with no leader when unclean election is off (KIP-966)', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    await c.createManual('t', [[1, 2]]);
    assert.equal((await c.alterIsr('t', [1])).errorCode, 0);
    const before = c.partition('t');
    await c.run(SESSION_MS + 2000, [2]);
    const after = c.partition('t');
    assert.equal(after.leader, -1);
    assert.deepEqual(after.isr, []);
    assert.deepEqual(after.elr, [1], 'it holds every committed record');
    assert.deepEqual(after.lastKnownElr, [1], 'the last leader is remembered');
    assert.equal(after.leaderEpoch, before.leaderEpoch + 1);

    // Back after a clean shutdown, the ELR member leads again: a clean election.
    const epoch = c.epochs.get(1)!;
    assert.equal((await c.register(1, { incarnationId: randomUuid(), previousBrokerEpoch: epoch })).errorCode, 0);
    assert.equal((await c.heartbeat(1)).isFenced, false);
    const back = c.partition('t');
    assert.equal(back.leader, 1);
    assert.deepEqual(back.isr, [1]);
    assert.deepEqual(back.elr, []);
    assert.deepEqual(back.lastKnownElr, []);
    assert.equal(back.leaderRecoveryState, 0);
  });

  it('takes a broker back from an unclean shutdown out of every ELR (KIP-966)', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createManual('t', [[1, 2, 3]], { 'min.insync.replicas': '3' });
    assert.equal((await c.alterIsr('t', [1, 2])).errorCode, 0);
    assert.deepEqual(c.partition('t').elr, [3], 'below min ISR the replica the ISR lost stays eligible');
    // Broker 3 dies (its session expires: fenced, still eligible) and restarts without a
    // clean-shutdown file: PreviousBrokerEpoch -1.
    await c.run(SESSION_MS + 2000, [1, 2]);
    assert.equal(c.sink.current.brokers.get(3)!.fenced, true);
    assert.deepEqual(c.partition('t').elr, [3]);
    assert.equal((await c.register(3, { incarnationId: randomUuid(), previousBrokerEpoch: -1n })).errorCode, 0);
    assert.deepEqual(c.partition('t').elr, []);
    assert.deepEqual(c.partition('t').isr, [1, 2]);
  });

  it('clears the ELR of a topic whose min.insync.replicas changes, and of every topic for a cluster-wide change (ClearElrRecord)', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createManual('a', [[1, 2, 3]], { 'min.insync.replicas': '3' });
    await c.createManual('b', [[1, 2, 3]], { 'min.insync.replicas': '3' });
    for (const t of ['a', 'b']) assert.equal((await c.alterIsr(t, [1, 2])).errorCode, 0);
    assert.deepEqual([c.partition('a').elr, c.partition('b').elr], [[3], [3]]);
    const alter = (resourceType: number, resourceName: string, value: string | null) =>
      c.controller.incrementalAlterConfigs(
        [{ resourceType, resourceName, configs: [{ name: 'min.insync.replicas', configOperation: value === null ? 1 : 0, value }] }],
        false,
      );

    const epochOfB = c.partition('b').partitionEpoch;
    const [topicLevel] = await alter(ConfigResourceType.TOPIC, 'a', '2');
    assert.equal(topicLevel!.errorCode, 0);
    assert.deepEqual(
      c.sink.written.at(-1)?.map((r) => r.type),
      ['ConfigRecord', 'ClearElrRecord'],
    );
    assert.deepEqual([c.partition('a').elr, c.partition('a').lastKnownElr], [[], []]);
    assert.deepEqual(c.partition('b').elr, [3], 'another topic keeps its ELR');
    assert.equal(c.partition('b').partitionEpoch, epochOfB);

    // Even the value it already has: Kafka clears every ELR on any cluster-level write.
    const [clusterLevel] = await alter(ConfigResourceType.BROKER, '', '1');
    assert.equal(clusterLevel!.errorCode, 0);
    assert.deepEqual(c.partition('b').elr, []);
    assert.equal(c.partition('b').partitionEpoch, epochOfB + 1, 'a cleared partition moves to a new partition epoch');
  });

  it('bootstraps a cluster-level min.insync.replicas from its own config, then refuses its removal and any broker-level one (KIP-966)', async () => {
    const c = new Cluster({ minInsyncReplicas: () => 2 });
    await c.start([1, 2, 3]);
    assert.equal(c.sink.current.resourceConfigs(ConfigResourceType.BROKER, '').get('min.insync.replicas'), '2');
    const incremental = (resourceName: string, name: string, value: string | null) =>
      c.controller.incrementalAlterConfigs(
        [{ resourceType: ConfigResourceType.BROKER, resourceName, configs: [{ name, configOperation: value === null ? 1 : 0, value }] }],
        false,
      );
    const refusals = [
      await incremental('', 'min.insync.replicas', null),
      await incremental('1', 'min.insync.replicas', '1'),
      await incremental('1', 'min.insync.replicas', null),
      // The legacy AlterConfigs replaces the resource's configs: leaving it out removes it.
      await c.controller.legacyAlterConfigs(
        [{ resourceType: ConfigResourceType.BROKER, resourceName: '', configs: [{ name: 'log.cleaner.backoff.ms', value: '15000' }] }],
        false,
      ),
    ].map(([r]) => [r!.errorCode, r!.errorMessage]);
    assert.deepEqual(refusals, [
      [Errors.INVALID_CONFIG.code, 'Cluster-level min.insync.replicas cannot be removed while ELR is enabled.'],
      [Errors.INVALID_CONFIG.code, 'Broker-level min.insync.replicas cannot be altered while ELR is enabled.'],
      [Errors.INVALID_CONFIG.code, 'Broker-level min.insync.replicas cannot be altered while ELR is enabled.'],
      [Errors.INVALID_CONFIG.code, 'Cluster-level min.insync.replicas cannot be removed while ELR is enabled.'],
    ]);
    assert.equal(c.sink.current.resourceConfigs(ConfigResourceType.BROKER, '').get('min.insync.replicas'), '2');
    const [changed] = await incremental('', 'min.insync.replicas', '1');
    assert.equal(changed!.errorCode, 0, 'the cluster-level value itself may change');
    const [otherConfig] = await incremental('1', 'log.cleaner.backoff.ms', '15000');
    assert.equal(otherConfig!.errorCode, 0, 'other broker-level configs may change');
  });

  it('writes no record, and so clears no ELR, for a topic config set to the value it has', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createManual('t', [[1, 2, 3]], { 'min.insync.replicas': '3' });
    assert.equal((await c.alterIsr('t', [1, 2])).errorCode, 0);
    const written = c.sink.written.length;
    const [r] = await c.controller.incrementalAlterConfigs(
      [
        {
          resourceType: ConfigResourceType.TOPIC,
          resourceName: 't',
          configs: [{ name: 'min.insync.replicas', configOperation: 0, value: '3' }],
        },
      ],
      false,
    );
    assert.equal(r!.errorCode, 0);
    assert.equal(c.sink.written.length, written);
    assert.deepEqual(c.partition('t').elr, [3]);
  });

  it('keeps the ELR under the cluster-wide dynamic min.insync.replicas when the topic sets none', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.controller.incrementalAlterConfigs(
      [
        {
          resourceType: ConfigResourceType.BROKER,
          resourceName: '',
          configs: [{ name: 'min.insync.replicas', configOperation: 0, value: '3' }],
        },
      ],
      false,
    );
    await c.createManual('t', [[1, 2, 3]]);
    assert.equal((await c.alterIsr('t', [1, 2])).errorCode, 0);
    assert.deepEqual(c.partition('t').elr, [3], 'below the cluster min ISR of 3 the replica the ISR lost stays eligible');
  });

  it('elects an out-of-sync live replica when unclean.leader.election.enable is on for the topic', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    await c.createManual('t', [[1, 2]]);
    await c.controller.incrementalAlterConfigs(
      [
        {
          resourceType: ConfigResourceType.TOPIC,
          resourceName: 't',
          configs: [{ name: 'unclean.leader.election.enable', configOperation: 0, value: 'true' }],
        },
      ],
      false,
    );
    assert.equal((await c.alterIsr('t', [1])).errorCode, 0);
    await c.run(SESSION_MS + 2000, [2]);
    const p = c.partition('t');
    assert.equal(p.leader, 2);
    assert.deepEqual(p.isr, [2]);
    assert.equal(p.leaderRecoveryState, 1, 'RECOVERING after an unclean election');
  });

  it('honours the cluster-wide unclean.leader.election.enable', async () => {
    const c = new Cluster();
    c.unclean = true;
    await c.start([1, 2]);
    await c.createManual('t', [[1, 2]]);
    await c.alterIsr('t', [1]);
    await c.run(SESSION_MS + 2000, [2]);
    assert.equal(c.partition('t').leader, 2);
  });

  it('gives a returning broker back the leaderless partitions whose ISR holds it, and nothing else', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    await c.createManual('alone', [[1, 2]]);
    await c.alterIsr('alone', [1]);
    await c.createManual('shared', [[1, 2]]);
    await c.run(SESSION_MS + 2000, [2]);
    assert.equal(c.partition('alone').leader, -1);
    assert.deepEqual(c.partition('shared').isr, [2]);
    // A new incarnation of broker 1 registers and catches up.
    assert.equal((await c.register(1, { incarnationId: randomUuid() })).errorCode, 0);
    assert.equal((await c.heartbeat(1)).isFenced, false);
    const alone = c.partition('alone');
    assert.equal(alone.leader, 1);
    assert.deepEqual(alone.isr, [1]);
    // It rejoins the other ISR only when that partition's leader says so.
    assert.deepEqual(c.partition('shared').isr, [2]);
    assert.equal(c.partition('shared').leader, 2);
  });

  it('starts every registered broker’s session afresh when it becomes active', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    await c.createManual('t', [[1, 2]]);
    c.controller.deactivate();
    await c.clock.advance(SESSION_MS * 3);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, false, 'no fencing while not active');
    await c.controller.activate();
    await c.run(SESSION_MS - 1000, [2]);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, false, 'just heard from at activation');
    await c.run(4000, [2]);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, true);
    assert.equal(c.sink.current.brokers.get(2)!.fenced, false);
  });
});

describe('cluster control: offline log dirs (KIP-858)', () => {
  const DIR_A = 'pQp2mD6ZQ2WfS0Bg3Cw8YQ';
  const DIR_B = 'Hr3n0vBtT6qZcH0c6nX1ww';

  /** Brokers 1-3, broker 1 with log dirs A and B, a partition it leads and one it follows. */
  async function withDirs(): Promise<Cluster> {
    const c = new Cluster();
    await c.controller.activate();
    assert.equal((await c.register(1, { logDirs: [DIR_A, DIR_B] })).errorCode, Errors.NONE.code);
    for (const id of [2, 3]) assert.equal((await c.register(id)).errorCode, Errors.NONE.code);
    for (const id of [1, 2, 3]) assert.equal((await c.heartbeat(id)).isFenced, false);
    await c.createManual('led', [[1, 2, 3]]);
    await c.createManual('follows', [[2, 1, 3]]);
    return c;
  }

  it('records the directory ids a broker registers (RegisterBrokerRecord v3 LogDirs)', async () => {
    const c = await withDirs();
    assert.deepEqual(c.sink.current.brokers.get(1)!.logDirs, [DIR_A, DIR_B]);
    assert.deepEqual(c.sink.current.brokers.get(2)!.logDirs, []);
  });

  it('fences a broker whose every log dir is offline: out of every ISR, leadership moved, fenced while it says so', async () => {
    const c = await withDirs();
    const before = c.partition('led');
    const r = await c.heartbeat(1, { offlineLogDirs: [DIR_B, DIR_A] });
    assert.equal(r.errorCode, Errors.NONE.code);
    assert.equal(r.isFenced, true);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, true);
    const led = c.partition('led');
    assert.equal(led.leader, 2);
    assert.deepEqual(led.isr, [2, 3]);
    assert.equal(led.leaderEpoch, before.leaderEpoch + 1);
    assert.deepEqual(c.partition('follows').isr, [2, 3]);
    // Its heartbeats keep reporting the dirs: it stays fenced and gets no leadership back.
    for (let i = 0; i < 3; i++) {
      await c.clock.advance(2000);
      assert.equal((await c.heartbeat(1, { offlineLogDirs: [DIR_A, DIR_B] })).isFenced, true);
      await c.heartbeat(2);
      await c.heartbeat(3);
    }
    assert.equal(c.sink.current.brokers.get(1)!.fenced, true);
    assert.equal(c.partition('led').leader, 2);
  });

  it('leaves leadership alone while some log dir of the broker is online (no replica is assigned to a dir)', async () => {
    const c = await withDirs();
    const r = await c.heartbeat(1, { offlineLogDirs: [DIR_A] });
    assert.equal(r.isFenced, false);
    assert.equal(c.partition('led').leader, 1);
    assert.deepEqual(c.partition('led').isr, [1, 2, 3]);
  });

  it('unfences the broker again once a restart registers it with its log dirs online', async () => {
    const c = await withDirs();
    await c.heartbeat(1, { offlineLogDirs: [DIR_A, DIR_B] });
    assert.equal((await c.register(1, { incarnationId: randomUuid(), logDirs: [DIR_A, DIR_B] })).errorCode, Errors.NONE.code);
    assert.equal((await c.heartbeat(1)).isFenced, false);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, false);
  });

  it('treats a broker that registered no log dirs as online whatever it reports', async () => {
    const c = await withDirs();
    assert.equal((await c.heartbeat(2, { offlineLogDirs: [DIR_A] })).isFenced, false);
    assert.equal(c.partition('follows').leader, 2);
  });
});

describe('cluster control: controlled shutdown', () => {
  it('moves leadership and ISR membership away, then lets the broker shut down once the others caught up', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createManual('led', [[1, 2, 3]]);
    await c.createManual('follows', [[2, 1, 3]]);
    await c.createManual('sole', [[1]]);
    const r = await c.heartbeat(1, { wantShutDown: true });
    assert.deepEqual([r.isFenced, r.shouldShutDown], [false, false]);
    assert.equal(c.sink.current.brokers.get(1)!.inControlledShutdown, true);
    assert.equal(c.partition('led').leader, 2);
    assert.deepEqual(c.partition('led').isr, [2, 3]);
    assert.deepEqual(c.partition('follows').isr, [2, 3]);
    assert.equal(c.partition('sole').leader, -1);
    assert.deepEqual(c.partition('sole').isr, [], 'with ELR the last ISR member leaves the ISR');
    assert.deepEqual(c.partition('sole').elr, [1], 'and stays eligible to lead');
    // A broker in controlled shutdown gets no new replicas.
    const n = await c.createTopic('n', 3, 2);
    for (const p of n.partitions.values()) assert.ok(!p.replicas.includes(1));
    // Brokers 2 and 3 have not yet reported the leadership moves.
    const waiting = await c.heartbeat(1, { wantShutDown: true });
    assert.equal(waiting.shouldShutDown, false);
    await c.heartbeat(2);
    await c.heartbeat(3);
    const done = await c.heartbeat(1, { wantShutDown: true });
    assert.deepEqual([done.isFenced, done.shouldShutDown], [true, true]);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, true);
  });

  it('shuts down at once a broker that leads nothing', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    await c.createManual('t', [[2, 1]]);
    const r = await c.heartbeat(1, { wantShutDown: true });
    assert.deepEqual([r.isFenced, r.shouldShutDown], [true, true]);
    assert.deepEqual(c.partition('t').isr, [2]);
  });

  it('refuses ISR membership to a broker in controlled shutdown', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createManual('t', [[2, 3, 1]]);
    await c.createManual('keep', [[1, 2]]);
    await c.heartbeat(1, { wantShutDown: true });
    const r = await c.alterIsr('t', [2, 3, 1]);
    assert.equal(r.partition!.errorCode, Errors.INELIGIBLE_REPLICA.code);
  });
});

describe('cluster control: AlterPartition', () => {
  async function threeBrokers() {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createManual('t', [[1, 2, 3]]);
    return c;
  }

  it('shrinks and expands the ISR, bumping only the partition epoch, and answers the committed state', async () => {
    const c = await threeBrokers();
    const before = c.partition('t');
    const shrink = await c.alterIsr('t', [1, 2]);
    assert.equal(shrink.errorCode, 0);
    assert.deepEqual(
      [
        shrink.partition!.errorCode,
        shrink.partition!.leaderId,
        shrink.partition!.isr,
        shrink.partition!.leaderEpoch,
        shrink.partition!.partitionEpoch,
      ],
      [0, 1, [1, 2], before.leaderEpoch, before.partitionEpoch + 1],
    );
    assert.deepEqual(c.partition('t').isr, [1, 2]);
    const expand = await c.alterIsr('t', [1, 2, 3]);
    assert.deepEqual(expand.partition!.isr, [1, 2, 3]);
    assert.equal(c.partition('t').partitionEpoch, before.partitionEpoch + 2);
    assert.equal(c.partition('t').leaderEpoch, before.leaderEpoch);
    // The same ISR again changes nothing and writes nothing.
    const writes = c.sink.written.length;
    const same = await c.alterIsr('t', [1, 2, 3]);
    assert.equal(same.partition!.errorCode, 0);
    assert.equal(c.sink.written.length, writes);
  });

  it('checks broker epoch, leader epoch, partition epoch and leadership', async () => {
    const c = await threeBrokers();
    const p = c.partition('t');
    assert.equal((await c.alterIsr('t', [1, 2], { brokerEpoch: 999n })).errorCode, Errors.STALE_BROKER_EPOCH.code);
    const code = async (fields: Parameters<Cluster['alterIsr']>[2], isr = [1, 2]) =>
      (await c.alterIsr('t', isr, fields)).partition!.errorCode;
    assert.equal(await code({ leaderEpoch: p.leaderEpoch - 1 }), Errors.FENCED_LEADER_EPOCH.code);
    assert.equal(await code({ leaderEpoch: p.leaderEpoch + 1 }), Errors.NOT_CONTROLLER.code);
    assert.equal(await code({ partitionEpoch: p.partitionEpoch + 1 }), Errors.NOT_CONTROLLER.code);
    assert.equal(c.partition('t').partitionEpoch, p.partitionEpoch, 'refusals change nothing');
    await c.alterIsr('t', [1, 2]);
    assert.equal(await code({ partitionEpoch: p.partitionEpoch }, [1]), Errors.INVALID_UPDATE_VERSION.code);
    assert.equal(await code({ brokerId: 2 }), Errors.INVALID_REQUEST.code, 'only the leader alters the ISR');
    assert.equal(await code({}, [2, 3]), Errors.INVALID_REQUEST.code, 'the ISR keeps its leader');
    assert.equal(await code({}, [1, 4]), Errors.INVALID_REQUEST.code, 'the ISR is made of replicas');
    assert.equal(await code({}, [1, 1]), Errors.INVALID_REQUEST.code);
  });

  it('refuses fenced members and members of another broker epoch with INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED before v2)', async () => {
    const c = await threeBrokers();
    await c.alterIsr('t', [1, 2]);
    await c.run(SESSION_MS + 2000, [1, 2]);
    assert.equal(c.sink.current.brokers.get(3)!.fenced, true);
    assert.equal((await c.alterIsr('t', [1, 2, 3])).partition!.errorCode, Errors.INELIGIBLE_REPLICA.code);
    assert.equal((await c.alterIsr('t', [1, 2, 3], { version: 1 })).partition!.errorCode, Errors.OPERATION_NOT_ATTEMPTED.code);
    // A member named with another epoch than its registration's (a restarted broker).
    const epoch2 = c.epochs.get(2)!;
    c.epochs.set(2, epoch2 + 1000n);
    assert.equal((await c.alterIsr('t', [1, 2])).partition!.errorCode, Errors.INELIGIBLE_REPLICA.code);
    c.epochs.set(2, epoch2);
    assert.equal((await c.alterIsr('t', [1, 2])).partition!.errorCode, 0);
  });

  it('finds topics by name before v2 and by id from v2, with UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID', async () => {
    const c = await threeBrokers();
    assert.deepEqual((await c.alterIsr('t', [1, 2], { version: 1 })).partition!.isr, [1, 2]);
    assert.deepEqual((await c.alterIsr('t', [1, 2, 3], { version: 2 })).partition!.isr, [1, 2, 3]);
    const byId = await c.controller.alterPartition(
      makeAlterPartitionRequest({
        brokerId: 1,
        brokerEpoch: c.epochs.get(1)!,
        topics: [
          makeAlterPartitionRequestTopicData({ topicId: 'AAAAAAAAAAAAAAAAAAAAAg', partitions: [makeAlterPartitionRequestPartitionData()] }),
        ],
      }),
      2,
    );
    assert.equal(byId.topics[0]!.partitions[0]!.errorCode, Errors.UNKNOWN_TOPIC_ID.code);
    const byName = await c.controller.alterPartition(
      makeAlterPartitionRequest({
        brokerId: 1,
        brokerEpoch: c.epochs.get(1)!,
        topics: [makeAlterPartitionRequestTopicData({ topicName: 'nope', partitions: [makeAlterPartitionRequestPartitionData()] })],
      }),
      1,
    );
    assert.equal(byName.topics[0]!.partitions[0]!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
  });
});

describe('cluster control: producer ids', () => {
  it('hands out blocks to brokers of the current epoch only', async () => {
    const c = new Cluster();
    await c.start([1]);
    const stale = await c.controller.allocateProducerIds(1, 77n);
    assert.equal(stale.errorCode, Errors.STALE_BROKER_EPOCH.code);
    const a = await c.controller.allocateProducerIds(1, c.epochs.get(1)!);
    const b = await c.controller.allocateProducerIds(1, c.epochs.get(1)!);
    assert.deepEqual([a.errorCode, a.producerIdStart, a.producerIdLen, b.producerIdStart], [0, 0n, 1000, 1000n]);
  });
});

describe('cluster control: replica placement', () => {
  it('spreads leaders evenly over the unfenced brokers', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3, 4]);
    const t = await c.createTopic('t', 12, 2);
    const leaders = new Map<number, number>();
    for (const p of t.partitions.values()) {
      assert.equal(new Set(p.replicas).size, 2);
      leaders.set(p.leader, (leaders.get(p.leader) ?? 0) + 1);
    }
    assert.deepEqual([...leaders.values()], [3, 3, 3, 3]);
  });

  it('puts each partition’s replicas on distinct racks', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3, 4, 5, 6], ['a', 'a', 'b', 'b', 'c', 'c']);
    const rackOf = (id: number) => c.sink.current.brokers.get(id)!.rack;
    const t = await c.createTopic('t', 9, 3);
    const leaders = new Set<number>();
    for (const p of t.partitions.values()) {
      assert.deepEqual(new Set(p.replicas.map(rackOf)).size, 3, `replicas ${p.replicas} span every rack`);
      leaders.add(p.leader);
    }
    assert.equal(leaders.size, 6);
  });

  it('places on fenced brokers only as followers, and refuses a factor above the registered brokers', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.run(SESSION_MS + 2000, [1, 2]);
    assert.equal(c.sink.current.brokers.get(3)!.fenced, true);
    const t = await c.createTopic('t', 6, 3);
    for (const p of t.partitions.values()) {
      assert.notEqual(p.leader, 3);
      assert.ok(p.replicas.includes(3));
      assert.ok(!p.isr.includes(3), 'a fenced replica starts out of the ISR');
    }
    const [r] = await c.controller.createTopics(
      [{ name: 'big', numPartitions: 1, replicationFactor: 4, assignments: [], configs: [] }],
      false,
    );
    assert.equal(r!.errorCode, Errors.INVALID_REPLICATION_FACTOR.code);
    assert.match(r!.errorMessage!, /only 3 broker\(s\) are registered/);
  });

  it('refuses placement when every broker is fenced, and manual assignments with no active broker', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    await c.run(SESSION_MS + 2000, [1]);
    const [manual] = await c.controller.createTopics(
      [{ name: 'm', numPartitions: -1, replicationFactor: -1, assignments: [{ partitionIndex: 0, brokerIds: [2] }], configs: [] }],
      false,
    );
    assert.equal(manual!.errorCode, Errors.INVALID_REPLICA_ASSIGNMENT.code);
    await c.run(SESSION_MS + 2000, []);
    const [r] = await c.controller.createTopics(
      [{ name: 'x', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      false,
    );
    assert.equal(r!.errorCode, Errors.INVALID_REPLICATION_FACTOR.code);
    assert.match(r!.errorMessage!, /All brokers are currently fenced/);
  });

  it('places added partitions the same way', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createTopic('t', 1, 2);
    const [r] = await c.controller.createPartitions([{ name: 't', count: 4, assignments: null }], false);
    assert.equal(r!.errorCode, 0);
    const leaders = new Set([...c.sink.current.topic('t')!.partitions.values()].map((p) => p.leader));
    assert.equal(leaders.size, 3);
  });
});

describe('cluster control: leader elections and reassignments', () => {
  it('ElectLeaders PREFERRED moves leadership back to the first replica when it is in the ISR', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    await c.createManual('t', [[1, 2]]);
    await c.heartbeat(1, { wantShutDown: true });
    assert.equal(c.partition('t').leader, 2);
    // Broker 1 stops, comes back as a new incarnation, and rejoins the ISR through the leader.
    await c.run(SESSION_MS + 2000, [2]);
    assert.equal((await c.register(1, { incarnationId: randomUuid() })).errorCode, 0);
    assert.equal((await c.heartbeat(1)).isFenced, false);
    const none = await c.controller.electLeaders(ElectionType.PREFERRED, [{ topic: 't', partitions: [0] }]);
    assert.equal(none.replicaElectionResults[0]!.partitionResult[0]!.errorCode, Errors.PREFERRED_LEADER_NOT_AVAILABLE.code);
    assert.equal((await c.alterIsr('t', [2, 1])).partition!.errorCode, 0);
    const r = await c.controller.electLeaders(ElectionType.PREFERRED, [{ topic: 't', partitions: [0] }]);
    assert.equal(r.replicaElectionResults[0]!.partitionResult[0]!.errorCode, 0);
    assert.equal(c.partition('t').leader, 1);
    const again = await c.controller.electLeaders(ElectionType.PREFERRED, [{ topic: 't', partitions: [0, 5] }]);
    assert.deepEqual(
      again.replicaElectionResults[0]!.partitionResult.map((p) => p.errorCode),
      [Errors.ELECTION_NOT_NEEDED.code, Errors.UNKNOWN_TOPIC_OR_PARTITION.code],
    );
    const all = await c.controller.electLeaders(ElectionType.PREFERRED, null);
    assert.deepEqual(all.replicaElectionResults, [{ topic: 't', partitionResult: [] }]);
    assert.equal((await c.controller.electLeaders(9, null)).errorCode, Errors.INVALID_REQUEST.code);
  });

  it('ElectLeaders UNCLEAN gives a leaderless partition a live out-of-sync replica', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    await c.createManual('t', [[1, 2]]);
    await c.alterIsr('t', [1]);
    await c.run(SESSION_MS + 2000, [2]);
    assert.equal(c.partition('t').leader, -1);
    const r = await c.controller.electLeaders(ElectionType.UNCLEAN, [{ topic: 't', partitions: [0] }]);
    assert.equal(r.replicaElectionResults[0]!.partitionResult[0]!.errorCode, 0);
    assert.equal(c.partition('t').leader, 2);
    assert.deepEqual(c.partition('t').isr, [2]);
  });

  it('rebalances leadership to preferred replicas every leader.imbalance.check.interval', async () => {
    const c = new Cluster({ autoLeaderRebalanceEnable: () => true, leaderImbalanceCheckIntervalMs: () => 30_000 });
    await c.start([1, 2]);
    await c.createManual('t', [[1, 2]]);
    await c.heartbeat(1, { wantShutDown: true });
    await c.run(SESSION_MS + 2000, [2]);
    await c.register(1, { incarnationId: randomUuid() });
    await c.heartbeat(1);
    await c.alterIsr('t', [2, 1]);
    assert.equal(c.partition('t').leader, 2);
    await c.run(20_000, [1, 2]);
    assert.equal(c.partition('t').leader, 1);
  });

  it('reassigns replicas: adding ones join, the reassignment completes when they are in the ISR, and can be cancelled', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3, 4]);
    await c.createManual('t', [[1, 2]]);
    await c.createManual('u', [[1, 2]]);
    const r = await c.controller.alterPartitionReassignments([
      {
        name: 't',
        partitions: [
          { partitionIndex: 0, replicas: [1, 3] },
          { partitionIndex: 9, replicas: [1] },
        ],
      },
      { name: 'u', partitions: [{ partitionIndex: 0, replicas: [3, 4] }] },
    ]);
    assert.deepEqual(
      r.responses.map((t) => t.partitions.map((p) => p.errorCode)),
      [[0, Errors.UNKNOWN_TOPIC_OR_PARTITION.code], [0]],
    );
    const moving = c.partition('t');
    assert.deepEqual([moving.replicas, moving.addingReplicas, moving.removingReplicas], [[1, 3, 2], [3], [2]]);
    const listed = await c.controller.listPartitionReassignments(null);
    assert.deepEqual(
      listed.topics.map((t) => [t.name, t.partitions[0]!.addingReplicas]),
      [
        ['t', [3]],
        ['u', [3, 4]],
      ],
    );
    // The leader adds the new replica to the ISR: the reassignment completes and 2 leaves.
    const done = await c.alterIsr('t', [1, 2, 3]);
    assert.equal(done.partition!.errorCode, 0);
    const after = c.partition('t');
    assert.deepEqual([after.replicas, after.isr, after.addingReplicas, after.removingReplicas], [[1, 3], [1, 3], [], []]);
    // Cancelling reverts to the replicas before the reassignment.
    const cancel = await c.controller.alterPartitionReassignments([{ name: 'u', partitions: [{ partitionIndex: 0, replicas: null }] }]);
    assert.equal(cancel.responses[0]!.partitions[0]!.errorCode, 0);
    assert.deepEqual(c.partition('u').replicas, [1, 2]);
    const nothing = await c.controller.alterPartitionReassignments([{ name: 'u', partitions: [{ partitionIndex: 0, replicas: null }] }]);
    assert.equal(nothing.responses[0]!.partitions[0]!.errorCode, Errors.NO_REASSIGNMENT_IN_PROGRESS.code);
    assert.deepEqual((await c.controller.listPartitionReassignments(null)).topics, []);
  });

  it('a reassignment that moves the leader out elects a new one and tells the old leader NEW_LEADER_ELECTED', async () => {
    const c = new Cluster();
    await c.start([1, 2, 3]);
    await c.createManual('t', [[1, 2]]);
    await c.controller.alterPartitionReassignments([{ name: 't', partitions: [{ partitionIndex: 0, replicas: [2, 3] }] }]);
    const r = await c.alterIsr('t', [1, 2, 3]);
    assert.equal(r.partition!.errorCode, Errors.NEW_LEADER_ELECTED.code);
    const p = c.partition('t');
    assert.deepEqual([p.replicas, p.isr, p.leader], [[2, 3], [2, 3], 2]);
  });
});

describe('cluster control: losing leadership', () => {
  it('stops its session timer when the quorum moves on without telling it', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    const writes = c.sink.written.length;
    c.sink.active = false;
    await c.clock.advance(SESSION_MS * 3);
    assert.equal(c.controller.isActive(), false);
    assert.equal(c.sink.written.length, writes);
    // Leading again, it starts over: the brokers are just heard from.
    c.sink.active = true;
    await c.controller.activate();
    assert.equal(c.controller.isActive(), true);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, false);
  });

  it('answers NOT_CONTROLLER when a write fails, changing nothing it would have written', async () => {
    const c = new Cluster();
    await c.controller.activate();
    await c.register(1);
    c.sink.failNextWrite = true;
    const r = await c.heartbeat(1);
    assert.equal(r.errorCode, Errors.NOT_CONTROLLER.code);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, true);
    assert.equal((await c.heartbeat(1)).isFenced, false);
  });

  it('starts over from the log when a fencing write fails', async () => {
    const c = new Cluster();
    await c.start([1, 2]);
    c.sink.failNextWrite = true;
    await c.run(SESSION_MS + 2000, [2]);
    // The failed fencing re-activated the controller: broker 1's session restarted.
    assert.equal(c.controller.isActive(), true);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, false);
    await c.run(SESSION_MS + 2000, [2]);
    assert.equal(c.sink.current.brokers.get(1)!.fenced, true);
  });
});
