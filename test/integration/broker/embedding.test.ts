import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Reader } from '../../../protocol/primitives.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { decodeApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import { Errors } from '../../../protocol/errors.ts';
import { Kafka, logLevel } from 'kafkajs';
import { startBroker, type EmbeddedBroker, type StartBrokerOptions } from '../../../src/index.ts';
import { RawClient, requestPayload } from '../../helpers/raw-client.ts';

async function apiVersionsErrorCode(port: number): Promise<number> {
  const client = await RawClient.connect(port);
  client.send(requestPayload(ApiKey.ApiVersions, 2, 1, Buffer.alloc(0)));
  const r = new Reader(await client.next());
  r.int32();
  const { errorCode } = decodeApiVersionsResponse(r, 2);
  client.close();
  return errorCode;
}

describe('embedding (startBroker)', () => {
  // Every broker a test started; a failed assertion must not leave one serving in this process.
  const started: EmbeddedBroker[] = [];
  const start = async (options?: StartBrokerOptions): Promise<EmbeddedBroker> => {
    const broker = await startBroker(options);
    started.push(broker);
    return broker;
  };
  afterEach(async () => {
    await Promise.all(started.splice(0).map((b) => b.close()));
  });

  it('starts on a free port with a temp data dir, serves, and removes the dir on close', async () => {
    const started = process.hrtime.bigint();
    const broker = await start();
    assert.notEqual(broker.port, 0);
    assert.equal(broker.bootstrap, `127.0.0.1:${broker.port}`);
    assert.ok(existsSync(broker.dataDir));
    assert.equal(await apiVersionsErrorCode(broker.port), Errors.NONE.code);
    const readyMs = Number(process.hrtime.bigint() - started) / 1e6;
    console.log(`      startBroker() to ApiVersions answered: ${readyMs.toFixed(1)} ms`);
    await broker.close();
    assert.equal(existsSync(broker.dataDir), false);
    await assert.rejects(RawClient.connect(broker.port));
  });

  it('takes a produce from kafkajs and serves it back (time to first acknowledged produce printed)', async () => {
    const started = process.hrtime.bigint();
    const broker = await start();
    const kafka = new Kafka({ clientId: 'embedding-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    try {
      await producer.connect();
      const [ack] = await producer.send({ topic: 'embedded', messages: [{ key: 'k', value: 'hello' }] });
      const firstAckMs = Number(process.hrtime.bigint() - started) / 1e6;
      console.log(`      startBroker() to first acknowledged produce (kafkajs, auto-created topic): ${firstAckMs.toFixed(1)} ms`);
      assert.equal(ack!.errorCode, 0);
      assert.equal(ack!.baseOffset, '0');
      const admin = kafka.admin();
      await admin.connect();
      const offsets = await admin.fetchTopicOffsets('embedded');
      assert.deepEqual(
        offsets.map((o) => [o.partition, o.high]),
        [[0, '1']],
      );
      await admin.disconnect();
    } finally {
      await producer.disconnect();
      await broker.close();
    }
  });

  it('keeps a caller-supplied data dir and applies overrides', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-embed-'));
    const broker = await start({ dataDir: dir, overrides: { 'num.partitions': 3 } });
    assert.equal(broker.broker.config.getInt('num.partitions'), 3);
    assert.equal(broker.broker.config.getBoolean('unsafe.bypass.fsync'), false, 'a dir the caller keeps is fsynced');
    await broker.close();
    assert.ok(existsSync(dir));
    await rm(dir, { recursive: true, force: true });
  });

  it('bypasses fsync only in the temp dir it deletes on close, unless told otherwise', async () => {
    const own = await start();
    assert.equal(own.broker.config.getBoolean('unsafe.bypass.fsync'), true);
    const fsynced = await start({ overrides: { 'unsafe.bypass.fsync': false } });
    assert.equal(fsynced.broker.config.getBoolean('unsafe.bypass.fsync'), false);
  });

  it('runs two brokers side by side', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    assert.notEqual(a.port, b.port);
    assert.equal(await apiVersionsErrorCode(a.port), Errors.NONE.code);
    assert.equal(await apiVersionsErrorCode(b.port), Errors.NONE.code);
    await Promise.all([a.close(), b.close()]);
  });
});
