// The broker's log must never be what stalls it. Found by the fuzzer: with synchronous
// logging, a reader of the broker's stderr that fell behind (a full pipe) made every log line
// spin on EAGAIN inside the event loop, and a client that made the broker log a lot (garbage
// frames, an acks=0 produce quoting 32 KB topic names in its close reason) stalled every
// other connection for seconds. Real broker process, its stderr deliberately not read.
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import type { ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
} from '../../../protocol/messages/produce.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { KafkaConnection, encodeRequestFrame } from '../../../src/client/connection.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { RawClient } from '../../helpers/raw-client.ts';

describe('logging under a stalled log reader (real broker process)', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;

  before(async () => {
    broker = await spawnBroker();
  });
  after(async () => {
    broker?.child.stderr?.resume();
    await broker?.cleanup();
  });

  it('keeps answering other connections while its stderr pipe is full', async () => {
    broker.child.stderr!.pause();
    const records = await buildRecordBatch({}, [{ key: null, value: Buffer.from('v'), timestamp: Date.now() }]);
    const longName = 'x'.repeat(32_767);
    // Each round makes the broker log well over a pipe's 64 KiB: an acks=0 produce whose close
    // reason names every failed partition, and a burst of garbage connections.
    for (let round = 0; round < 5; round++) {
      const producer = await RawClient.connect(broker.port, broker.host);
      producer.write(
        Buffer.concat(
          encodeRequestFrame(
            ApiKey.Produce,
            4,
            1,
            'log-backpressure',
            makeProduceRequest({
              acks: 0,
              timeoutMs: 1000,
              topicData: [
                makeProduceRequestTopicProduceData({
                  name: longName,
                  partitionData: Array.from({ length: 8 }, (_, index) => makeProduceRequestPartitionProduceData({ index, records })),
                }),
              ],
            }),
          ),
        ),
      );
      const garbage = await Promise.all(Array.from({ length: 50 }, () => RawClient.connect(broker.port, broker.host)));
      for (const g of garbage) g.write(Buffer.from([0, 0, 0, 8, 0x7f, 0x7f, 0, 0, 0, 0, 0, 1]));
      await Promise.all([...garbage, producer].map((c) => c.whenClosed()));
    }
    const probe = await KafkaConnection.connect(broker.host, broker.port);
    const started = performance.now();
    const versions = await probe.send<ApiVersionsResponse>(ApiKey.ApiVersions, {}, 0);
    const elapsedMs = performance.now() - started;
    probe.close();
    assert.equal(versions.errorCode, Errors.NONE.code);
    assert.ok(elapsedMs < 1000, `ApiVersions took ${elapsedMs.toFixed(0)} ms while the log reader was stalled`);
    assert.equal(broker.child.exitCode, null, 'the broker is alive');
    broker.child.stderr!.resume();
  });
});
