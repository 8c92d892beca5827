// Request frames captured from librdkafka (kcat 2.0.2) and kafka-python 2.0.2 by
// scripts/capture-frames/third-party.ts, decoded with our codec.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { decodeRequestHeader, type RequestHeader } from '../../../protocol/headers.ts';
import { apis } from '../../../protocol/messages/index.ts';
import type { ApiVersionsRequest } from '../../../protocol/messages/api-versions.ts';
import type { FetchRequest } from '../../../protocol/messages/fetch.ts';
import type { FindCoordinatorRequest } from '../../../protocol/messages/find-coordinator.ts';
import type { JoinGroupRequest } from '../../../protocol/messages/join-group.ts';
import type { ListOffsetsRequest } from '../../../protocol/messages/list-offsets.ts';
import type { MetadataRequest } from '../../../protocol/messages/metadata.ts';
import type { OffsetCommitRequest } from '../../../protocol/messages/offset-commit.ts';
import type { OffsetFetchRequest } from '../../../protocol/messages/offset-fetch.ts';
import type { ProduceRequest } from '../../../protocol/messages/produce.ts';
import type { SyncGroupRequest } from '../../../protocol/messages/sync-group.ts';
import { Reader } from '../../../protocol/primitives.ts';
import { batchesIn, CompressionType, readRecords } from '../../../protocol/records/index.ts';

const TOPIC = 'frames';

function kebab(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

function framesOf(client: string) {
  const dir = new URL(`../../fixtures/frames/${client}/`, import.meta.url);
  const decode = (file: string): { header: RequestHeader; body: unknown; rest: number } => {
    const r = new Reader(readFileSync(new URL(file, dir)));
    const header = decodeRequestHeader(r);
    const body = apis.get(header.requestApiKey)!.decodeRequest(r, header.requestApiVersion);
    return { header, body, rest: r.remaining() };
  };
  const files = readdirSync(dir).filter((f) => f.endsWith('.bin'));
  /** The body of the one fixture of `api` (whatever version the client chose). */
  const body = <T>(api: string): T => {
    const file = files.find((f) => f.startsWith(`${api}-v`));
    assert.ok(file, `no ${api} fixture for ${client}`);
    return decode(file).body as T;
  };
  return { files, decode, body };
}

/** One expectation per client; the frames themselves are what the client chose to send. */
const CLIENTS = [
  {
    client: 'librdkafka',
    clientId: 'kcat-frames',
    group: 'kcat-group',
    codec: CompressionType.Lz4,
    acks: -1,
    records: [
      ['k1', 'hello '.repeat(20)],
      ['k2', 'world '.repeat(20)],
    ],
  },
  {
    client: 'kafka-python',
    clientId: 'kafka-python-frames',
    group: 'python-group',
    codec: CompressionType.None,
    acks: 1,
    records: [
      ['k0', 'python 0'],
      ['k1', 'python 1'],
    ],
  },
] as const;

for (const expected of CLIENTS) {
  describe(`frames captured from ${expected.client}`, () => {
    const { files, decode, body } = framesOf(expected.client);

    it('every frame decodes completely, carries the client id and is named after its api and version', () => {
      assert.ok(files.length >= 10, `${files.length} fixtures`);
      for (const file of files) {
        const { header, rest } = decode(file);
        assert.equal(rest, 0, `${file}: bytes left after the body`);
        assert.equal(header.clientId, expected.clientId, file);
        assert.equal(`${kebab(apis.get(header.requestApiKey)!.name)}-v${header.requestApiVersion}.bin`, file);
      }
    });

    it('ApiVersions and Metadata name the client and the topic', () => {
      const versions = body<ApiVersionsRequest>('api-versions');
      if (expected.client === 'librdkafka') assert.equal(versions.clientSoftwareName, 'librdkafka');
      const metadata = body<MetadataRequest>('metadata');
      assert.deepEqual(
        metadata.topics!.map((t) => t.name),
        [TOPIC],
      );
    });

    it('Produce carries record batches with valid CRCs and the records sent', async () => {
      const produce = body<ProduceRequest>('produce');
      assert.equal(produce.acks, expected.acks);
      assert.equal(produce.transactionalId, null);
      assert.deepEqual(
        produce.topicData.map((t) => t.name),
        [TOPIC],
      );
      const records = [];
      for (const partition of produce.topicData[0]!.partitionData) {
        for (const batch of batchesIn(partition.records!, true)) {
          assert.equal(batch.magic, 2);
          assert.ok(batch.isCrcValid());
          assert.equal(batch.baseOffset, 0);
          assert.equal(batch.compression, expected.codec);
          records.push(...(await readRecords(batch)));
        }
      }
      assert.deepEqual(
        records.map((r) => [r.key!.toString(), r.value!.toString()]),
        expected.records,
      );
      if (expected.client === 'kafka-python')
        assert.deepEqual(
          records.map((r) => r.timestamp),
          [1700000000000, 1700000000001],
        );
    });

    it('Fetch and ListOffsets ask for the topic from the beginning', () => {
      const fetch = body<FetchRequest>('fetch');
      assert.equal(fetch.replicaId, -1);
      assert.equal(fetch.topics[0]!.topic, TOPIC);
      assert.equal(fetch.topics[0]!.partitions[0]!.partition, 0);
      const list = body<ListOffsetsRequest>('list-offsets');
      assert.equal(list.topics[0]!.name, TOPIC);
      assert.equal(list.topics[0]!.partitions[0]!.timestamp, -2n);
    });

    it('the group requests name the group, the consumer protocol and the committed offsets', () => {
      assert.equal(body<FindCoordinatorRequest>('find-coordinator').key, expected.group);
      const join = body<JoinGroupRequest>('join-group');
      assert.equal(join.groupId, expected.group);
      assert.equal(join.memberId, '');
      assert.equal(join.protocolType, 'consumer');
      assert.deepEqual(
        join.protocols.map((p) => p.name),
        ['range', 'roundrobin'],
      );
      const sync = body<SyncGroupRequest>('sync-group');
      assert.equal(sync.groupId, expected.group);
      assert.equal(sync.assignments.length, 1);
      assert.ok(sync.assignments[0]!.memberId.startsWith(expected.clientId));
      const fetched = body<OffsetFetchRequest>('offset-fetch');
      assert.equal(fetched.groupId, expected.group);
      assert.deepEqual(
        fetched.topics!.map((t) => [t.name, t.partitionIndexes]),
        [[TOPIC, [0]]],
      );
      const commit = body<OffsetCommitRequest>('offset-commit');
      assert.equal(commit.groupId, expected.group);
      assert.equal(commit.generationIdOrMemberEpoch, sync.generationId);
      const committed = commit.topics[0]!.partitions[0]!;
      assert.equal(commit.topics[0]!.name, TOPIC);
      assert.ok(committed.committedOffset > 0n);
    });
  });
}
