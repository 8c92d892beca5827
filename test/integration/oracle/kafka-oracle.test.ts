// The oracle process itself: answers in order, reports Kafka's refusals as errors without
// dying, and takes int64 values exactly in both directions.
import assert from 'node:assert/strict';
import { kafkaOracle, OracleError } from './kafka-oracle.ts';
import type { KafkaOracle } from './kafka-oracle.ts';

describe('Kafka oracle process', function () {
  this.timeout(60_000);
  let oracle: KafkaOracle;

  before(async function () {
    const o = await kafkaOracle();
    if (!o) this.skip();
    oracle = o;
  });

  it('is one process shared by every caller', async () => {
    assert.equal(await kafkaOracle(), oracle);
  });

  it("reports Kafka's refusal as an OracleError and keeps serving", async () => {
    await assert.rejects(
      oracle.encode('ProduceRequest', 2, '{"transactionalId":"t","acks":1,"timeoutMs":5,"topicData":[]}'),
      (e: unknown) => e instanceof OracleError && /non-default transactionalId at version 2/.test(e.message),
    );
    await assert.rejects(oracle.encode('NoSuchMessage', 0, '{}'), OracleError);
    const { bytes } = await oracle.encode('ApiVersionsRequest', 3, '{"clientSoftwareName":"a","clientSoftwareVersion":"1"}');
    assert.equal(bytes.toString('hex'), '0261023100');
  });

  it('carries int64 values beyond 2^53 exactly both ways', async () => {
    const big = 2n ** 62n + 1n;
    const json = `{"replicaId":1,"topics":[{"name":"t","partitions":[{"partitionIndex":0,"timestamp":${big}}]}]}`;
    const { bytes } = await oracle.encode('ListOffsetsRequest', 1, json);
    assert.equal(bytes.readBigInt64BE(bytes.length - 8), big);
    const decoded = await oracle.decode('ListOffsetsRequest', 1, bytes);
    const partitions = (decoded.json.topics as { partitions: { timestamp: string }[] }[])[0]!.partitions;
    assert.equal(partitions[0]!.timestamp, big.toString());
    assert.equal(decoded.remaining, 0);
  });

  it('answers many pipelined requests in order', async () => {
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        oracle.encode('ApiVersionsRequest', 3, `{"clientSoftwareName":"c${i}","clientSoftwareVersion":"1"}`),
      ),
    );
    answers.forEach(({ bytes }, i) => {
      assert.equal(bytes.subarray(1, 1 + `c${i}`.length).toString(), `c${i}`);
    });
  });

  it('serves versions newer than Kafka 3.9 from the newer client jar', async () => {
    const versions = await oracle.versions('ListOffsetsRequest');
    assert.equal(versions.lowest, 0);
    assert.ok(versions.highest >= 10);
    const { kafka } = await oracle.encode('ListOffsetsRequest', 10, '{"replicaId":-1,"isolationLevel":0,"topics":[],"timeoutMs":0}');
    assert.match(kafka, /^kafka-clients-4\./);
  });
});
