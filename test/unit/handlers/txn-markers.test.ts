import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import {
  makeWriteTxnMarkersRequest,
  makeWriteTxnMarkersRequestWritableTxnMarker,
  makeWriteTxnMarkersRequestWritableTxnMarkerTopic,
} from '../../../protocol/messages/write-txn-markers.ts';
import { buildEndTxnMarker } from '../../../protocol/records/control.ts';
import { handleWriteTxnMarkers, invalidTxnMarkerReason, type TxnMarkerServices } from '../../../src/handlers/txn-markers.ts';

const producerIds = fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
const producerEpochs = fc.integer({ min: -0x8000, max: 0x7fff });

/** A replica manager that builds each marker as the real one does and records what it wrote. */
function markerWriter() {
  const written: { topic: string; partition: number; producerId: bigint }[] = [];
  const services: TxnMarkerServices = {
    requestTimeoutMs: () => 1000,
    replicaManager: {
      writeTxnMarker: async (topic, partition, marker) => {
        await buildEndTxnMarker({ ...marker, timestamp: 0 });
        written.push({ topic, partition, producerId: marker.producerId });
        return Errors.NONE.code;
      },
    },
  };
  return { services, written };
}

function quietLog() {
  const lines: unknown[] = [];
  return { lines, log: { client: '127.0.0.1:1234', logger: { info: (obj: unknown) => lines.push(obj) } as never } };
}

const noGroups = { completeTransaction: () => undefined };

function marker(producerId: bigint, producerEpoch: number, partitions: number[]) {
  return makeWriteTxnMarkersRequestWritableTxnMarker({
    producerId,
    producerEpoch,
    transactionResult: true,
    coordinatorEpoch: 3,
    topics: [makeWriteTxnMarkersRequestWritableTxnMarkerTopic({ name: 'orders', partitionIndexes: partitions })],
  });
}

describe('WriteTxnMarkers validation', () => {
  it('a marker without a producer id, or with a producer id but no epoch, has a reason to be refused', () => {
    assert.match(invalidTxnMarkerReason({ producerId: -1n, producerEpoch: 0 }) ?? '', /needs a producer id/);
    assert.match(invalidTxnMarkerReason({ producerId: -1n, producerEpoch: -1 }) ?? '', /needs a producer id/);
    assert.match(invalidTxnMarkerReason({ producerId: 7n, producerEpoch: -1 }) ?? '', /needs a producer epoch/);
    assert.equal(invalidTxnMarkerReason({ producerId: 7n, producerEpoch: 0 }), null);
  });

  it('every marker it lets through can be built as a control batch', async () => {
    await fc.assert(
      fc.asyncProperty(
        producerIds,
        producerEpochs,
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
        async (producerId, producerEpoch, coordinatorEpoch) => {
          if (invalidTxnMarkerReason({ producerId, producerEpoch }) !== null) return;
          const batch = await buildEndTxnMarker({ commit: true, coordinatorEpoch, producerId, producerEpoch, timestamp: 0 });
          assert.ok(batch.length > 0);
        },
      ),
    );
  });

  it('answers INVALID_REQUEST for the partitions of a refused marker, writes the others and logs the refusals in one line at info', async () => {
    const { services, written } = markerWriter();
    const { lines, log } = quietLog();
    const request = makeWriteTxnMarkersRequest({
      markers: [marker(-1n, 0, [0, 1]), marker(5n, -1, [2]), marker(9n, 1, [3])],
    });
    const response = await handleWriteTxnMarkers(services, noGroups, request, log);
    const codes = response.markers.map((m) => [m.producerId, m.topics[0]!.partitions.map((p) => [p.partitionIndex, p.errorCode])]);
    assert.deepEqual(codes, [
      [
        -1n,
        [
          [0, Errors.INVALID_REQUEST.code],
          [1, Errors.INVALID_REQUEST.code],
        ],
      ],
      [5n, [[2, Errors.INVALID_REQUEST.code]]],
      [9n, [[3, Errors.NONE.code]]],
    ]);
    assert.deepEqual(written, [{ topic: 'orders', partition: 3, producerId: 9n }]);
    assert.deepEqual(lines, [
      { client: '127.0.0.1:1234', error: 'INVALID_REQUEST', refusedMarkers: 2, reason: 'a transaction marker needs a producer id, not -1' },
    ]);
  });

  it('never reaches the marker builder with values it refuses, whatever the producer id and epoch', async () => {
    await fc.assert(
      fc.asyncProperty(producerIds, producerEpochs, async (producerId, producerEpoch) => {
        const { services } = markerWriter();
        const request = makeWriteTxnMarkersRequest({ markers: [marker(producerId, producerEpoch, [0])] });
        const response = await handleWriteTxnMarkers(services, noGroups, request, quietLog().log);
        const expected = invalidTxnMarkerReason({ producerId, producerEpoch }) === null ? Errors.NONE.code : Errors.INVALID_REQUEST.code;
        assert.equal(response.markers[0]!.topics[0]!.partitions[0]!.errorCode, expected);
      }),
      {
        examples: [
          [-1n, 0],
          [0n, -1],
          [-1n, -1],
        ],
      },
    );
  });
});
