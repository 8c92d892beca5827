// Requests the protocol fuzzer found failing inside the broker (answered UNKNOWN_SERVER_ERROR,
// a stack trace logged at error level), sent as they were to the real broker process: each
// is now answered with Kafka's code, logged at info at most, and the connection serves the
// next request.
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeApiVersionsRequest, type ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import {
  makeWriteTxnMarkersRequest,
  makeWriteTxnMarkersRequestWritableTxnMarker,
  makeWriteTxnMarkersRequestWritableTxnMarkerTopic,
  type WriteTxnMarkersResponse,
} from '../../../protocol/messages/write-txn-markers.ts';
import { completeLines, errorLines } from '../../../scripts/fuzz/broker-log.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { autoCreateTopic, call } from '../../helpers/raw-requests.ts';
import { eventually } from '../../helpers/wait.ts';

const TOPIC = 'fuzz-findings';

describe('requests the fuzzer found failing inside the broker (real broker process)', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;
  let client: RawClient;

  before(async () => {
    broker = await spawnBroker();
    client = await RawClient.connect(broker.port, broker.host);
    await autoCreateTopic(client, TOPIC, Buffer.from('first'));
  });

  after(async () => {
    client?.close();
    await broker?.cleanup();
  });

  /** The broker's log once `line` shows in it (the log is written asynchronously). */
  async function logThrough(line: RegExp): Promise<string[]> {
    await eventually(`a log line matching ${line}`, () => line.test(broker.stderr()), 10_000);
    return completeLines(broker.stderr(), 0).lines;
  }

  async function servesNext(): Promise<void> {
    const versions = await call<ApiVersionsResponse>(
      client,
      ApiKey.ApiVersions,
      3,
      makeApiVersionsRequest({ clientSoftwareName: 'sluice-test', clientSoftwareVersion: '1.0' }),
    );
    assert.equal(versions.errorCode, Errors.NONE.code);
    assert.equal(broker.child.exitCode, null, 'the broker process is alive');
  }

  const marker = (producerId: bigint, producerEpoch: number, partitionIndexes: number[]) =>
    makeWriteTxnMarkersRequestWritableTxnMarker({
      producerId,
      producerEpoch,
      transactionResult: true,
      coordinatorEpoch: 0,
      topics: [makeWriteTxnMarkersRequestWritableTxnMarkerTopic({ name: TOPIC, partitionIndexes })],
    });

  for (const version of [0, 1]) {
    it(`WriteTxnMarkers v${version}: a marker with producer id -1 or without an epoch is answered INVALID_REQUEST, the valid marker beside them is written`, async () => {
      const request = makeWriteTxnMarkersRequest({
        markers: [marker(-1n, 0, [0]), marker(4242n + BigInt(version), -1, [0]), marker(77n + BigInt(version), 0, [0])],
      });
      const response = await call<WriteTxnMarkersResponse>(client, ApiKey.WriteTxnMarkers, version, request);
      assert.deepEqual(
        response.markers.map((m) => [m.producerId, m.topics[0]!.partitions[0]!.errorCode]),
        [
          [-1n, Errors.INVALID_REQUEST.code],
          [4242n + BigInt(version), Errors.INVALID_REQUEST.code],
          [77n + BigInt(version), Errors.NONE.code],
        ],
      );
      await servesNext();
      const lines = await logThrough(new RegExp(`"reason":"producer ${4242 + version}: a transaction marker needs a producer epoch`));
      assert.deepEqual(
        errorLines(lines).map((l) => l.raw),
        [],
      );
    });
  }
});
