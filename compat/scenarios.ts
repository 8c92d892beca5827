import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Capability } from './capabilities.ts';
import { CODECS } from './driver.ts';
import type { Codec, ConsumedRecord, Delivery, Driver, DriverInfo, ProducedRecord } from './driver.ts';
import type { Fixture } from './support/fixture.ts';
import { murmur2Partition } from './support/murmur2.ts';
import { sleep } from './support/process.ts';

// The scenarios, written once against the Driver interface. Every expectation here is Apache
// Kafka's behaviour: the suite runs each scenario against the reference broker too.

export interface ScenarioContext {
  driver: Driver;
  fixture: Fixture;
  bootstrap: string;
  // A topic or group name unique to this run, client and scenario.
  name(suffix?: string): string;
}

export interface Scenario {
  id: string;
  requires: readonly Capability[];
  usesProducer: boolean;
  usesConsumer: boolean;
  // Why the client cannot express this scenario, or null when it can.
  notApplicable(client: DriverInfo): string | null;
  timeoutMs: number;
  run(context: ScenarioContext): Promise<void>;
}

const PRODUCE_COUNT = 1000;
const LARGE_RECORD_BYTES = 900 * 1024;

function scenario(s: Scenario): Scenario {
  return s;
}

const metadata = scenario({
  id: 'metadata',
  requires: ['api-versions', 'metadata'],
  usesProducer: false,
  usesConsumer: false,
  notApplicable: () => null,
  timeoutMs: 60_000,
  async run({ driver, bootstrap }) {
    const info = await driver.metadata();
    // Every broker of the bootstrap (one, or each node of a cluster) and no other, at the
    // address it is reached at.
    const expected = bootstrap.split(',').sort();
    const brokers = info.brokers.map((b) => `${b.host}:${b.port}`).sort();
    assert.deepEqual(brokers, expected, `the brokers of ${bootstrap} expected, got ${JSON.stringify(info.brokers)}`);
    assert.equal(new Set(info.brokers.map((b) => b.id)).size, info.brokers.length, 'one id per broker');
    // With KRaft the controller id a client sees is one of the brokers (Kafka answers with a
    // random live broker: clients cannot reach the controllers).
    if (info.controllerId !== null) {
      assert.ok(
        info.brokers.some((b) => b.id === info.controllerId),
        `controller ${info.controllerId} is one of the brokers`,
      );
    }
    assert.ok(Array.isArray(info.topics));
  },
});

const unknownTopic = scenario({
  id: 'unknown-topic',
  requires: ['metadata'],
  usesProducer: false,
  usesConsumer: false,
  notApplicable: () => null,
  timeoutMs: 60_000,
  async run({ driver, fixture, name }) {
    const topic = name();
    await assert.rejects(driver.describeTopic(topic), driver.errors.unknownTopic);
    // auto.create.topics.enable=false: asking about it did not create it.
    await assert.rejects(fixture.endOffsets(topic));
  },
});

const topicLifecycle = scenario({
  id: 'topic-lifecycle',
  requires: ['metadata', 'topics-admin', 'configs'],
  usesProducer: false,
  usesConsumer: false,
  notApplicable: (d) => (d.features.admin ? null : 'no admin API'),
  timeoutMs: 90_000,
  async run({ driver, name }) {
    const topic = name();
    await driver.createTopic!(topic, 3, { 'cleanup.policy': 'compact', 'retention.ms': '3600000' });
    await eventually(async () => assert.ok((await driver.listTopics!()).includes(topic), 'created topic listed'));
    // In a cluster each broker learns of the topic as it applies the metadata log: the broker
    // asked next may not know it yet, on Kafka as on Sluice.
    await eventually(async () => assert.equal((await driver.describeTopic(topic)).partitions, 3));
    let configs: Record<string, string> = {};
    await eventually(async () => {
      configs = await driver.describeConfigs!(topic);
      assert.equal(configs['cleanup.policy'], 'compact');
    });
    assert.equal(configs['retention.ms'], '3600000');
    assert.equal(configs['segment.bytes'], '1073741824', 'defaults are described too');

    await driver.createPartitions!(topic, 5);
    await eventually(async () => assert.equal((await driver.describeTopic(topic)).partitions, 5));

    await driver.alterConfigs!(topic, { 'cleanup.policy': 'compact', 'retention.ms': '7200000' });
    await eventually(async () => {
      configs = await driver.describeConfigs!(topic);
      assert.equal(configs['retention.ms'], '7200000');
      assert.equal(configs['cleanup.policy'], 'compact');
    });

    await driver.deleteTopic!(topic);
    await eventually(async () => assert.ok(!(await driver.listTopics!()).includes(topic), 'deleted topic gone'));
  },
});

function produceConsume(codec: Codec): Scenario {
  const codecCapability: Capability[] = codec === 'none' ? [] : [codec];
  return scenario({
    id: `produce-consume-${codec}`,
    requires: ['topics-admin', 'produce-fetch', ...codecCapability],
    usesProducer: true,
    usesConsumer: true,
    notApplicable: (d) => (d.features.codecs.includes(codec) ? null : `${codec} is not among its usable codecs (see its driver)`),
    timeoutMs: 120_000,
    async run({ driver, fixture, name }) {
      const topic = name();
      const partitions = 3;
      await fixture.createTopic(topic, partitions);
      const records = keyedRecords(driver, PRODUCE_COUNT, codec);
      const before = Date.now();
      const deliveries = await driver.produce(topic, records, { codec, idempotent: false, murmur2: true });
      const after = Date.now();
      const consumed = await driver.consume({
        topic,
        partitions: range(partitions),
        from: 'earliest',
        autoOffsetReset: 'earliest',
        count: records.length,
        timeoutMs: 60_000,
      });
      verifyRoundTrip(driver, records, deliveries, consumed, { partitions, before, after });
    },
  });
}

const listOffsets = scenario({
  id: 'list-offsets',
  requires: ['topics-admin', 'produce-fetch', 'list-offsets-by-time'],
  usesProducer: true,
  usesConsumer: true,
  notApplicable: (d) => (d.features.listOffsets ? null : 'no ListOffsets API'),
  timeoutMs: 90_000,
  async run({ driver, fixture, name }) {
    const topic = name();
    await fixture.createTopic(topic, 1);
    const count = 10;
    const base = Date.now() - 600_000;
    if (driver.features.recordTimestamps) {
      const records = range(count).map((i) => ({ key: `k${i}`, value: `v${i}`, headers: [], timestamp: base + i * 1000 }));
      await driver.produce(topic, records, { codec: 'none', idempotent: false, murmur2: false });
    } else {
      // Without per-record timestamps, one send per record a few milliseconds apart gives
      // each record its own CreateTime.
      for (const i of range(count)) {
        await driver.produce(topic, [{ key: `k${i}`, value: `v${i}`, headers: [] }], {
          codec: 'none',
          idempotent: false,
          murmur2: false,
        });
        await sleep(5);
      }
    }
    const consumed = await driver.consume({
      topic,
      partitions: [0],
      from: 'earliest',
      autoOffsetReset: 'earliest',
      count,
      timeoutMs: 60_000,
    });
    const timestamps = consumed.sort((a, b) => a.offset - b.offset).map((r) => r.timestamp);
    for (const i of range(count - 1)) assert.ok(timestamps[i]! < timestamps[i + 1]!, 'timestamps increase');

    assert.equal(await driver.listOffset!(topic, 0, 'earliest'), 0);
    assert.equal(await driver.listOffset!(topic, 0, 'latest'), count);
    assert.equal(await driver.listOffset!(topic, 0, { timestamp: timestamps[5]! }), 5, 'exact timestamp');
    assert.equal(await driver.listOffset!(topic, 0, { timestamp: timestamps[4]! + 1 }), 5, 'first at or after');
    assert.equal(await driver.listOffset!(topic, 0, { timestamp: timestamps[0]! - 60_000 }), 0, 'before all');
    const pastEnd = driver.features.pastEndTimestamp === 'none' ? null : count;
    assert.equal(await driver.listOffset!(topic, 0, { timestamp: timestamps[count - 1]! + 60_000 }), pastEnd, 'after all');
  },
});

const consumerGroups = scenario({
  id: 'consumer-groups',
  requires: ['topics-admin', 'produce-fetch', 'groups'],
  usesProducer: true,
  usesConsumer: true,
  notApplicable: (d) => (d.features.groups ? null : 'no consumer groups'),
  timeoutMs: 180_000,
  async run({ driver, fixture, name }) {
    const topic = name();
    const partitions = 4;
    const groupA = name('a');
    const groupB = name('b');
    // Clients without an API for committed offsets (kcat) have them read beside them.
    const committedOffsets = (group: string) =>
      driver.committedOffsets ? driver.committedOffsets(group, topic, partitions) : fixture.committedOffsets(group, topic, partitions);
    await fixture.createTopic(topic, partitions);
    const first = seqRecords(0, 100);
    await driver.produce(topic, first, { codec: 'none', idempotent: false, murmur2: true });

    const shared = await driver.groupConsume!({ group: groupA, topic, members: 2, count: 100, timeoutMs: 90_000 });
    assert.equal(shared.assignments.length, 2);
    const assigned = shared.assignments.flat().sort((a, b) => a - b);
    assert.deepEqual(assigned, range(partitions), `members divide the partitions: ${JSON.stringify(shared.assignments)}`);
    for (const a of shared.assignments) assert.ok(a.length > 0, 'every member has partitions');
    assert.deepEqual(seqsOf(shared.records), range(100));

    let ends = await fixture.endOffsets(topic);
    let committed = await committedOffsets(groupA);
    assert.deepEqual(committed, ends, 'committed offsets reach the end: lag 0');

    await driver.produce(topic, seqRecords(100, 50), { codec: 'none', idempotent: false, murmur2: true });
    ends = await fixture.endOffsets(topic);
    committed = await committedOffsets(groupA);
    assert.equal(sum(ends) - sum(committed as number[]), 50, 'lag is committed vs end offsets');

    const resumed = await driver.groupConsume!({ group: groupA, topic, members: 1, count: 50, timeoutMs: 90_000 });
    assert.deepEqual(
      seqsOf(resumed.records),
      range(50).map((i) => 100 + i),
      'a restarted member resumes',
    );
    assert.deepEqual(await committedOffsets(groupA), ends);

    assert.deepEqual(
      await committedOffsets(groupB),
      range(partitions).map(() => null),
    );
    const independent = await driver.groupConsume!({ group: groupB, topic, members: 1, count: 150, timeoutMs: 90_000 });
    assert.deepEqual(seqsOf(independent.records), range(150), 'a second group reads everything');
    assert.deepEqual(await committedOffsets(groupA), ends, 'group A unchanged');
  },
});

// The consumer asks the broker to hold an empty fetch for LONG_POLL_WAIT_MS; a record produced
// meanwhile must end that wait early. Arriving well before the wait would have expired is
// the observable difference between a woken fetch and one answered at its deadline. Clients
// that Kafka itself leaves waiting (DriverInfo.features.wokenByAppend) wait less and check
// that the record arrives.
const LONG_POLL_WAIT_MS = 30_000;
const SHORT_POLL_WAIT_MS = 5_000;
const longPoll = scenario({
  id: 'long-poll',
  requires: ['topics-admin', 'produce-fetch', 'long-poll'],
  usesProducer: false,
  usesConsumer: true,
  notApplicable: () => null,
  timeoutMs: 90_000,
  async run({ driver, fixture, name }) {
    const topic = name();
    await fixture.createTopic(topic, 1);
    const waiting = driver.consume({
      topic,
      partitions: [0],
      from: { offset: 0 },
      autoOffsetReset: 'earliest',
      count: 1,
      maxWaitMs: driver.features.wokenByAppend ? LONG_POLL_WAIT_MS : SHORT_POLL_WAIT_MS,
      timeoutMs: 80_000,
    });
    let receivedAt = 0;
    const received = waiting.then((records) => {
      receivedAt = Date.now();
      return records;
    });
    // Time for the consumer (a JVM or Python process for some clients) to be waiting.
    await sleep(3000);
    await fixture.seed(topic, 0, ['wake up']);
    const producedAt = Date.now();
    const records = await received;
    assert.equal(records.length, 1);
    assert.equal(records[0]!.value, 'wake up');
    assert.ok(
      !driver.features.wokenByAppend || receivedAt - producedAt < LONG_POLL_WAIT_MS / 3,
      `record arrived ${receivedAt - producedAt} ms after it was produced: the waiting fetch was not woken`,
    );
  },
});

const largeRecord = scenario({
  id: 'large-record',
  requires: ['topics-admin', 'produce-fetch'],
  usesProducer: true,
  usesConsumer: true,
  notApplicable: () => null,
  timeoutMs: 90_000,
  async run({ driver, fixture, name }) {
    const topic = name();
    await fixture.createTopic(topic, 1);
    const value = randomText(LARGE_RECORD_BYTES);
    const record: ProducedRecord = { key: 'large', value, headers: [['size', String(value.length)]] };
    const [delivery] = await driver.produce(topic, [record], { codec: 'none', idempotent: false, murmur2: false });
    if (delivery) assert.deepEqual(delivery, { partition: 0, offset: 0 });
    const [consumed] = await driver.consume({
      topic,
      partitions: [0],
      from: 'earliest',
      autoOffsetReset: 'earliest',
      count: 1,
      timeoutMs: 60_000,
    });
    assert.equal(consumed!.offset, 0);
    assert.equal(consumed!.key, 'large');
    assert.equal(consumed!.value.length, value.length);
    assert.ok(consumed!.value === value, '900 KiB value comes back byte for byte');
  },
});

const recordTooLarge = scenario({
  id: 'record-too-large',
  requires: ['topics-admin', 'produce-fetch', 'max-message-bytes'],
  usesProducer: true,
  usesConsumer: false,
  notApplicable: () => null,
  timeoutMs: 90_000,
  async run({ driver, fixture, name }) {
    const topic = name();
    // A topic limit below every client's own request-size limit, so that the broker decides.
    await fixture.createTopic(topic, 1, { 'max.message.bytes': '65536' });
    const record: ProducedRecord = { key: 'big', value: randomText(128 * 1024), headers: [] };
    await assert.rejects(
      driver.produce(topic, [record], { codec: 'none', idempotent: false, murmur2: false }),
      driver.errors.messageTooLarge,
    );
    assert.deepEqual(await fixture.endOffsets(topic), [0], 'nothing was appended');
  },
});

const idempotentProducer = scenario({
  id: 'idempotent-producer',
  requires: ['topics-admin', 'produce-fetch', 'idempotence'],
  usesProducer: true,
  usesConsumer: true,
  notApplicable: (d) => (d.features.idempotence ? null : 'no idempotent producer'),
  timeoutMs: 90_000,
  async run({ driver, fixture, name }) {
    const topic = name();
    const partitions = 2;
    await fixture.createTopic(topic, partitions);
    const records = seqRecords(0, 200);
    await driver.produce(topic, records, { codec: 'none', idempotent: true, murmur2: true });
    const consumed = await driver.consume({
      topic,
      partitions: range(partitions),
      from: 'earliest',
      autoOffsetReset: 'earliest',
      count: 200,
      timeoutMs: 60_000,
    });
    assert.deepEqual(seqsOf(consumed), range(200), 'every record exactly once');
    for (const p of range(partitions)) {
      const offsets = consumed.filter((r) => r.partition === p).map((r) => r.offset);
      assert.deepEqual(offsets, range(offsets.length), `partition ${p} holds no duplicate or gap`);
    }
    assert.deepEqual(sum(await fixture.endOffsets(topic)), 200);
  },
});

const transactions = scenario({
  id: 'transactions',
  requires: ['topics-admin', 'produce-fetch', 'idempotence', 'transactions'],
  usesProducer: true,
  usesConsumer: true,
  notApplicable: (d) => (d.features.transactions ? null : 'no transactional producer that commits and aborts on request'),
  timeoutMs: 120_000,
  async run({ driver, fixture, name }) {
    const topic = name();
    const partitions = 2;
    await fixture.createTopic(topic, partitions);
    await driver.produceTransactions!(topic, name('txn'), [
      { records: seqRecords(0, 50), commit: true },
      { records: seqRecords(50, 50), commit: false },
      { records: seqRecords(100, 50), commit: true },
    ]);
    const consumed = await driver.consume({
      topic,
      partitions: range(partitions),
      from: 'earliest',
      autoOffsetReset: 'earliest',
      count: 100,
      readCommitted: true,
      timeoutMs: 60_000,
    });
    const committed = [...range(50), ...range(50).map((i) => i + 100)];
    assert.deepEqual(seqsOf(consumed), committed, 'the committed records once each, none of the aborted ones');
    // The aborted records and the commit and abort markers take offsets too.
    assert.ok(sum(await fixture.endOffsets(topic)) > 150, 'the aborted records are in the log');
  },
});

const consumeTransformProduce = scenario({
  id: 'consume-transform-produce',
  requires: ['topics-admin', 'produce-fetch', 'idempotence', 'transactions', 'groups'],
  usesProducer: true,
  usesConsumer: true,
  notApplicable: (d) => (d.features.transactions ? null : "no transactional producer that commits a consumer's offsets"),
  timeoutMs: 150_000,
  async run({ driver, fixture, name }) {
    const input = name('in');
    const output = name('out');
    const group = name('group');
    await fixture.createTopic(input, 2);
    await fixture.createTopic(output, 2);
    const values = range(40).map((i) => `record ${i}`);
    await fixture.seed(input, 0, values.slice(0, 20));
    await fixture.seed(input, 1, values.slice(20));
    await driver.transformInTransaction!({ input, output, group, transactionalId: name('txn'), count: 40, timeoutMs: 90_000 });
    const consumed = await driver.consume({
      topic: output,
      partitions: range(2),
      from: 'earliest',
      autoOffsetReset: 'earliest',
      count: 40,
      readCommitted: true,
      timeoutMs: 60_000,
    });
    assert.deepEqual(consumed.map((r) => r.value).sort(), [...values].sort(), 'every input record written once, committed');
    // The offsets become visible with the markers, which follow the commit.
    const end = await fixture.endOffsets(input);
    const deadline = Date.now() + 30_000;
    let committed = await fixture.committedOffsets(group, input, 2);
    while (JSON.stringify(committed) !== JSON.stringify(end) && Date.now() < deadline) {
      await sleep(200);
      committed = await fixture.committedOffsets(group, input, 2);
    }
    assert.deepEqual(committed, end, "the group's offsets were committed with the transaction");
  },
});

const offsetReset = scenario({
  id: 'offset-reset',
  requires: ['topics-admin', 'produce-fetch'],
  usesProducer: false,
  usesConsumer: true,
  notApplicable: (d) => (d.features.resetsOutOfRange ? null : 'no reset of an out-of-range position'),
  timeoutMs: 90_000,
  async run({ driver, fixture, name }) {
    const topic = name();
    await fixture.createTopic(topic, 1);
    await fixture.seed(
      topic,
      0,
      range(10).map((i) => `seed ${i}`),
    );
    const consumed = await driver.consume({
      topic,
      partitions: [0],
      from: { offset: 1000 },
      autoOffsetReset: 'earliest',
      count: 10,
      timeoutMs: 60_000,
    });
    assert.deepEqual(
      consumed.map((r) => [r.offset, r.value]),
      range(10).map((i) => [i, `seed ${i}`]),
      'an offset past the end resets to the earliest',
    );
  },
});

// Kafka's Partition.effectiveMinIsr: min.insync.replicas above a partition's replica count is
// capped by it, so one replica in sync is enough for acks=all on an RF 1 topic (on a cluster
// whose default min.insync.replicas is 2 as much as with the topic's own setting).
const acksAllOneReplica = scenario({
  id: 'acks-all-one-replica',
  requires: ['topics-admin', 'produce-fetch', 'configs'],
  usesProducer: true,
  usesConsumer: true,
  notApplicable: () => null,
  timeoutMs: 90_000,
  async run({ driver, fixture, name }) {
    const topic = name();
    await fixture.createTopic(topic, 1, { 'min.insync.replicas': '2' }, 1);
    const records = seqRecords(0, 20);
    // Resolves only once every record is acknowledged under acks=all.
    await driver.produce(topic, records, { codec: 'none', idempotent: false, murmur2: true });
    const consumed = await driver.consume({
      topic,
      partitions: [0],
      from: 'earliest',
      autoOffsetReset: 'earliest',
      count: 20,
      timeoutMs: 60_000,
    });
    assert.deepEqual(seqsOf(consumed), range(20), 'every acknowledged record committed and read back');
    assert.deepEqual(await fixture.endOffsets(topic), [20]);
  },
});

export const SCENARIOS: readonly Scenario[] = [
  metadata,
  unknownTopic,
  topicLifecycle,
  ...CODECS.map(produceConsume),
  listOffsets,
  consumerGroups,
  longPoll,
  largeRecord,
  recordTooLarge,
  idempotentProducer,
  transactions,
  consumeTransformProduce,
  offsetReset,
  acksAllOneReplica,
];

export function requiredCapabilities(s: Scenario, driver: DriverInfo): Capability[] {
  const all = new Set<Capability>(s.requires);
  if (s.usesProducer) for (const c of driver.producerRequires) all.add(c);
  if (s.usesConsumer) for (const c of driver.consumerRequires) all.add(c);
  return [...all];
}

// Data and checks shared by the scenarios.

function keyedRecords(driver: DriverInfo, count: number, codec: Codec): ProducedRecord[] {
  const base = Date.now() - 3_600_000;
  return range(count).map((i) => {
    const headers: [string, string][] = driver.features.recordHeaders
      ? [
          ['seq', String(i)],
          ['trace', `t-${i % 7}`],
        ]
      : [['trace', 'compat']];
    if (driver.features.duplicateHeaderKeys) headers.push(['dup', 'a'], ['dup', 'b']);
    return {
      key: `key-${i % 37}`,
      value: `${i} value ${codec} ${'é∑'.repeat(i % 5)} ${'x'.repeat(i % 113)}`,
      headers,
      timestamp: driver.features.recordTimestamps ? base + i : undefined,
    };
  });
}

function seqRecords(first: number, count: number): ProducedRecord[] {
  return range(count).map((i) => ({ key: `key-${(first + i) % 23}`, value: `${first + i}`, headers: [] }));
}

function seqOf(record: { value: string }): number {
  return Number.parseInt(record.value, 10);
}

function seqsOf(records: ConsumedRecord[]): number[] {
  return records.map(seqOf).sort((a, b) => a - b);
}

function verifyRoundTrip(
  driver: DriverInfo,
  produced: ProducedRecord[],
  deliveries: Delivery[],
  consumed: ConsumedRecord[],
  bounds: { partitions: number; before: number; after: number },
): void {
  assert.equal(consumed.length, produced.length, 'every record consumed');
  const bySeq = new Map<number, ConsumedRecord>();
  for (const record of consumed) {
    const seq = seqOf(record);
    assert.ok(!bySeq.has(seq), `record ${seq} consumed twice`);
    bySeq.set(seq, record);
  }
  const keyPartition = new Map<string, number>();
  for (const [seq, sent] of produced.entries()) {
    const got = bySeq.get(seq);
    assert.ok(got, `record ${seq} consumed`);
    assert.equal(got.key, sent.key, `key of ${seq}`);
    assert.equal(got.value, sent.value, `value of ${seq}`);
    assert.deepEqual(got.headers, sent.headers, `headers of ${seq}`);
    if (sent.timestamp !== undefined) {
      assert.equal(got.timestamp, sent.timestamp, `timestamp of ${seq}`);
    } else {
      assert.ok(got.timestamp >= bounds.before - 1000 && got.timestamp <= bounds.after + 1000, `CreateTime of ${seq}`);
    }
    const delivery = deliveries[seq];
    if (delivery) {
      assert.equal(got.partition, delivery.partition, `partition of ${seq} as acknowledged`);
      assert.equal(got.offset, delivery.offset, `offset of ${seq} as acknowledged`);
    }
    const key = sent.key!;
    const seen = keyPartition.get(key);
    if (seen === undefined) keyPartition.set(key, got.partition);
    else assert.equal(got.partition, seen, `key ${key} always lands in one partition`);
    if (driver.features.murmur2) {
      assert.equal(got.partition, murmur2Partition(Buffer.from(key), bounds.partitions), `murmur2 partition of ${key}`);
    }
  }
  assert.ok(new Set(keyPartition.values()).size > 1, 'keys spread over partitions');
  for (const p of range(bounds.partitions)) {
    const inPartition = consumed.filter((r) => r.partition === p).sort((a, b) => a.offset - b.offset);
    for (let i = 1; i < inPartition.length; i++) {
      assert.ok(seqOf(inPartition[i - 1]!) < seqOf(inPartition[i]!), `partition ${p} keeps the order of sends`);
    }
  }
}

export function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function randomText(length: number): string {
  return randomBytes(Math.ceil((length * 3) / 4) + 3)
    .toString('base64')
    .slice(0, length);
}

// Admin changes in Kafka reach the metadata that describes them a moment later.
async function eventually(check: () => Promise<void>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(200);
    }
  }
}
