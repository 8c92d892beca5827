// A combined broker+controller with a separate CONTROLLER listener: ApiVersions is served on
// both listeners, and Fetch on the controller listener is Raft's (the metadata partition),
// while Fetch on the broker listener stays the data path's.
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { decodeResponseHeader, encodeRequestHeader } from '../../../protocol/headers.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import type { ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  makeFetchRequestReplicaState,
  type FetchRequest,
  type FetchResponse,
} from '../../../protocol/messages/fetch.ts';
import { Reader, Writer } from '../../../protocol/primitives.ts';
import { batchesIn } from '../../../protocol/records/batch.ts';
import { startBroker, type EmbeddedBroker } from '../../../src/index.ts';
import { METADATA_TOPIC } from '../../../protocol/internal-topics.ts';
import { METADATA_TOPIC_ID } from '../../../src/handlers/quorum.ts';
import { freePort } from '../../helpers/wait.ts';
import { RawClient } from '../../helpers/raw-client.ts';

let correlationId = 0;

/** Sends one request encoded with our codec and decodes the response. */
async function call<Res>(port: number, apiKey: number, version: number, body: unknown): Promise<Res> {
  const api = apis.get(apiKey)!;
  const id = ++correlationId;
  const w = new Writer();
  encodeRequestHeader(w, { requestApiKey: apiKey, requestApiVersion: version, correlationId: id, clientId: 'raw' });
  api.encodeRequest(w, body, version);
  const client = await RawClient.connect(port);
  try {
    client.send(w.toBuffer());
    const r = new Reader(await client.next());
    assert.equal(decodeResponseHeader(r, apiKey, version), id);
    return api.decodeResponse(r, version) as Res;
  } finally {
    client.close();
  }
}

function metadataFetch(version: number, topic: Partial<{ topic: string; topicId: string }>, currentLeaderEpoch = -1): FetchRequest {
  return makeFetchRequest({
    clusterId: null,
    // From v15 the follower's id travels in ReplicaState (KIP-903).
    replicaId: version >= 15 ? -1 : 2,
    replicaState: makeFetchRequestReplicaState({ replicaId: version >= 15 ? 2 : -1 }),
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    topics: [
      makeFetchRequestFetchTopic({
        ...topic,
        partitions: [
          makeFetchRequestFetchPartition({
            partition: 0,
            currentLeaderEpoch,
            fetchOffset: 0n,
            lastFetchedEpoch: 0,
            partitionMaxBytes: 1 << 20,
          }),
        ],
      }),
    ],
  });
}

describe('controller listener of a combined broker+controller', function () {
  this.timeout(30_000);
  let broker: EmbeddedBroker;
  let brokerPort: number;
  let controllerPort: number;
  let leaderEpoch = -1;

  before(async () => {
    controllerPort = await freePort();
    broker = await startBroker({
      overrides: {
        listeners: `PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:${controllerPort}`,
        'controller.listener.names': 'CONTROLLER',
        'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
        'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
      },
    });
    brokerPort = broker.broker.listeners.find((l) => l.role === 'broker')!.boundPort;
    assert.equal(broker.broker.listeners.find((l) => l.role === 'controller')!.boundPort, controllerPort);
  });

  after(async () => {
    await broker?.close();
  });

  it('answers ApiVersions on the controller listener with the controller APIs', async () => {
    const res = await call<ApiVersionsResponse>(controllerPort, ApiKey.ApiVersions, 3, {
      clientSoftwareName: 'raft',
      clientSoftwareVersion: '1',
    });
    assert.equal(res.errorCode, Errors.NONE.code);
    const keys = new Set(res.apiKeys.map((k) => k.apiKey));
    for (const key of [
      ApiKey.ApiVersions,
      ApiKey.Fetch,
      ApiKey.Vote,
      ApiKey.BeginQuorumEpoch,
      ApiKey.EndQuorumEpoch,
      ApiKey.FetchSnapshot,
      ApiKey.DescribeQuorum,
    ]) {
      assert.ok(keys.has(key), `api key ${key} advertised on the controller listener`);
    }
    // Broker-only APIs are not served there.
    assert.equal(keys.has(ApiKey.Produce), false);
    assert.equal(keys.has(ApiKey.Metadata), false);
  });

  it('still answers ApiVersions on the broker listener, without the Raft-only APIs', async () => {
    const res = await call<ApiVersionsResponse>(brokerPort, ApiKey.ApiVersions, 2, {});
    assert.equal(res.errorCode, Errors.NONE.code);
    const keys = new Set(res.apiKeys.map((k) => k.apiKey));
    assert.ok(keys.has(ApiKey.Produce) && keys.has(ApiKey.Fetch));
    assert.equal(keys.has(ApiKey.Vote), false);
  });

  it('fences a Fetch of the metadata log with a stale leader epoch, naming the leader', async () => {
    const res = await call<FetchResponse>(controllerPort, ApiKey.Fetch, 12, metadataFetch(12, { topic: METADATA_TOPIC }));
    assert.equal(res.errorCode, Errors.NONE.code);
    const p = res.responses[0]!.partitions[0]!;
    assert.equal(p.errorCode, Errors.FENCED_LEADER_EPOCH.code);
    assert.equal(p.currentLeader.leaderId, 1);
    assert.ok(p.currentLeader.leaderEpoch >= 1);
    leaderEpoch = p.currentLeader.leaderEpoch;
  });

  it('serves the metadata log to a Fetch by name (v12) on the controller listener', async () => {
    const res = await call<FetchResponse>(controllerPort, ApiKey.Fetch, 12, metadataFetch(12, { topic: METADATA_TOPIC }, leaderEpoch));
    assert.equal(res.errorCode, Errors.NONE.code);
    assert.equal(res.responses.length, 1);
    assert.equal(res.responses[0]!.topic, METADATA_TOPIC);
    const p = res.responses[0]!.partitions[0]!;
    assert.equal(p.errorCode, Errors.NONE.code);
    assert.equal(p.currentLeader.leaderId, 1);
    assert.equal(p.currentLeader.leaderEpoch, leaderEpoch);
    assert.ok(p.highWatermark > 0n, 'the broker registration at least is committed');
    const batches = [...batchesIn(p.records!, true)];
    assert.ok(batches.length > 0);
    assert.equal(batches[0]!.baseOffset, 0);
  });

  it('serves the metadata log to a Fetch by topic id (v13+) on the controller listener', async () => {
    for (const version of [13, 16]) {
      const res = await call<FetchResponse>(
        controllerPort,
        ApiKey.Fetch,
        version,
        metadataFetch(version, { topicId: METADATA_TOPIC_ID }, leaderEpoch),
      );
      assert.equal(res.errorCode, Errors.NONE.code);
      assert.equal(res.responses[0]!.topicId, METADATA_TOPIC_ID);
      const p = res.responses[0]!.partitions[0]!;
      assert.equal(p.errorCode, Errors.NONE.code);
      assert.ok(p.records!.length > 0);
    }
  });

  it('refuses a Fetch of any other partition on the controller listener with INVALID_REQUEST', async () => {
    const byName = await call<FetchResponse>(controllerPort, ApiKey.Fetch, 12, metadataFetch(12, { topic: 'orders' }));
    assert.equal(byName.errorCode, Errors.INVALID_REQUEST.code);
    const byId = await call<FetchResponse>(controllerPort, ApiKey.Fetch, 13, metadataFetch(13, { topicId: 'AAAAAAAAAAAAAAAAAAAAAg' }));
    assert.equal(byId.errorCode, Errors.INVALID_REQUEST.code);
  });

  it('refuses a Fetch from another cluster with INCONSISTENT_CLUSTER_ID', async () => {
    const request = { ...metadataFetch(12, { topic: METADATA_TOPIC }), clusterId: 'q7Jg3kPYQ1i2ZsQnMFvD2g' };
    const res = await call<FetchResponse>(controllerPort, ApiKey.Fetch, 12, request);
    assert.equal(res.errorCode, Errors.INCONSISTENT_CLUSTER_ID.code);
  });

  it('keeps Fetch on the broker listener on the data path (the metadata topic is not a data partition)', async () => {
    const res = await call<FetchResponse>(brokerPort, ApiKey.Fetch, 12, metadataFetch(12, { topic: METADATA_TOPIC }));
    assert.equal(res.errorCode, Errors.NONE.code);
    assert.notEqual(res.responses[0]!.partitions[0]!.errorCode, Errors.NONE.code);
  });
});
