import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { Reader, Writer } from '../../../protocol/primitives.ts';
import { encodeRequestHeader } from '../../../protocol/headers.ts';
import {
  decodeFetchResponse,
  encodeFetchRequest,
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
} from '../../../protocol/messages/fetch.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { decodeApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import { Errors } from '../../../protocol/errors.ts';
import { BROKER_NODE_FLAGS } from '../../../src/cli/node-flags.ts';
import { spawnBroker, sluiceCommand, type BrokerProcess } from '../../helpers/broker-process.ts';
import { RawClient, requestPayload } from '../../helpers/raw-client.ts';

const REPO = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');

async function apiVersionsV3(port: number): Promise<{ errorCode: number; apiKeys: number[] }> {
  const client = await RawClient.connect(port);
  const name = Buffer.from('sluice-test');
  const body = Buffer.concat([Buffer.from([name.length + 1]), name, Buffer.from([4]), Buffer.from('1.0'), Buffer.from([0])]);
  client.send(requestPayload(ApiKey.ApiVersions, 3, 1, body, true));
  const r = new Reader(await client.next());
  assert.equal(r.int32(), 1);
  const response = decodeApiVersionsResponse(r, 3);
  client.close();
  return { errorCode: response.errorCode, apiKeys: response.apiKeys.map((k) => k.apiKey) };
}

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cmd = sluiceCommand(args);
  return new Promise((resolve) => {
    const child = spawn(cmd.command, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('sluice dev (the CLI process)', () => {
  let broker: BrokerProcess | undefined;
  afterEach(async () => {
    await broker?.cleanup();
    broker = undefined;
  });

  it('prints a ready line with the bound address and answers ApiVersions there', async () => {
    broker = await spawnBroker();
    assert.match(broker.stdout(), /^sluice ready: node 1 listening on PLAINTEXT:\/\/127\.0\.0\.1:\d+, data in /);
    assert.notEqual(broker.port, 0);
    const { errorCode, apiKeys } = await apiVersionsV3(broker.port);
    assert.equal(errorCode, Errors.NONE.code);
    assert.ok(apiKeys.includes(ApiKey.ApiVersions));
  });

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`serves kafkajs (describeCluster, produce) and keeps acknowledged records across a ${signal} restart`, async () => {
      broker = await spawnBroker();
      const kafka = (b: BrokerProcess): Kafka => new Kafka({ clientId: 'cli-test', brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
      let admin = kafka(broker).admin();
      await admin.connect();
      const cluster = await admin.describeCluster();
      assert.deepEqual(
        cluster.brokers.map((b) => [b.nodeId, b.host, b.port]),
        [[1, '127.0.0.1', broker.port]],
      );
      assert.equal(cluster.controller, 1);
      await admin.createTopics({
        topics: [{ topic: 'cli-topic', numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
      });
      const producer = kafka(broker).producer();
      await producer.connect();
      await producer.send({
        topic: 'cli-topic',
        acks: -1,
        messages: [
          { partition: 1, value: 'a' },
          { partition: 1, value: 'b' },
        ],
      });
      await producer.disconnect();
      await admin.disconnect();

      const code = await broker.stop(signal);
      assert.equal(code, signal === 'SIGTERM' ? 0 : null);
      broker = await broker.restart();
      admin = kafka(broker).admin();
      await admin.connect();
      const offsets = await admin.fetchTopicOffsets('cli-topic');
      assert.deepEqual(offsets.map((o) => [o.partition, o.high]).sort(), [
        [0, '0'],
        [1, '2'],
      ]);
      const [described] = (
        await admin.describeConfigs({ resources: [{ type: 2, name: 'cli-topic', configNames: ['retention.ms'] }], includeSynonyms: false })
      ).resources;
      assert.equal(described!.configEntries[0]!.configValue, '3600000');
      await admin.disconnect();
    });
  }

  it('exits 0 on SIGTERM', async () => {
    broker = await spawnBroker();
    await apiVersionsV3(broker.port);
    assert.equal(await broker.stop('SIGTERM'), 0);
  });

  it('on SIGTERM answers a long-poll fetch in progress (its partition no longer led) before exiting 0', async () => {
    broker = await spawnBroker();
    const admin = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'idle-topic' }] });
    await admin.disconnect();
    const client = await RawClient.connect(broker.port);
    const w = new Writer();
    encodeRequestHeader(w, { requestApiKey: ApiKey.Fetch, requestApiVersion: 11, correlationId: 9, clientId: 'test' });
    encodeFetchRequest(
      w,
      makeFetchRequest({
        replicaId: -1,
        maxWaitMs: 600_000,
        minBytes: 1,
        maxBytes: 1024 * 1024,
        sessionEpoch: -1,
        topics: [
          makeFetchRequestFetchTopic({
            topic: 'idle-topic',
            partitions: [makeFetchRequestFetchPartition({ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1024 * 1024 })],
          }),
        ],
      }),
      11,
    );
    client.send(w.toBuffer());
    // The fetch is parked (nothing to return for ten minutes) when the signal arrives.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const exit = broker.stop('SIGTERM');
    const r = new Reader(await client.next());
    assert.equal(r.int32(), 9);
    const response = decodeFetchResponse(r, 11);
    // The controlled shutdown took leadership away first (with no other replica the partition
    // is left without a leader, as Kafka does): the parked fetch is answered as a non-leader's.
    assert.equal(response.responses[0]!.partitions[0]!.errorCode, Errors.NOT_LEADER_OR_FOLLOWER.code);
    assert.equal(await exit, 0);
  });

  it('exits 0 on SIGINT', async () => {
    broker = await spawnBroker();
    assert.equal(await broker.stop('SIGINT'), 0);
  });

  it('logs JSON lines on stderr at the level from SLUICE_LOG_LEVEL', async () => {
    broker = await spawnBroker({ env: { SLUICE_LOG_LEVEL: 'debug' } });
    await apiVersionsV3(broker.port);
    await broker.stop();
    const lines = broker
      .stderr()
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    assert.ok(lines.some((l) => l.msg === 'listening'));
    assert.ok(
      lines.some((l) => l.level === 20 && l.msg === 'connection accepted'),
      'debug lines are written',
    );
  });
});

describe('sluice start and usage errors', () => {
  it('starts from a server.properties file, with --override winning over it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-start-'));
    const props = join(dir, 'server.properties');
    await writeFile(
      props,
      [
        '# a Kafka-style file',
        'node.id=3',
        'process.roles=broker,controller',
        'listeners=PLAINTEXT://127.0.0.1:0',
        'controller.quorum.voters=3@127.0.0.1:0',
        `log.dirs=${join(dir, 'logs')}`,
        'num.partitions=2',
      ].join('\n'),
    );
    const cmd = sluiceCommand(['start', '--config', props, '--override', 'node.id=3', '--override', 'num.partitions=4']);
    const child = spawn(cmd.command, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve();
        });
        child.on('exit', (code) => reject(new Error(`exited ${code}`)));
      });
      assert.match(out, /^sluice ready: node 3 listening on PLAINTEXT:\/\/127\.0\.0\.1:\d+/);
    } finally {
      // A broker left running on a failed assertion would keep the test run alive.
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      assert.equal(await exited, 0);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('runs the broker with its Node flags from the sluice command and from npm start', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-bin-'));
    const child = spawn(join(REPO, 'bin/sluice.js'), ['dev', '--port', '0', '--data-dir', join(dir, 'data')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('sluice ready')) resolve();
        });
        child.on('exit', (code) => reject(new Error(`exited ${code}`)));
      });
      const argv = (await readFile(`/proc/${child.pid}/cmdline`, 'utf8')).split('\0');
      for (const flag of BROKER_NODE_FLAGS) assert.ok(argv.includes(flag), `${flag} in ${argv.join(' ')}`);
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      await rm(dir, { recursive: true, force: true });
    }
    const pkg = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { scripts: { start: string } };
    const startArgv = pkg.scripts.start.split(/\s+/);
    for (const flag of BROKER_NODE_FLAGS) assert.ok(startArgv.includes(flag), `${flag} in npm start`);
  });

  it("rejects a bad config value with Kafka's wording and exit code 2", async () => {
    const { code, stderr } = await run([
      'dev',
      '--port',
      '0',
      '--data-dir',
      join(tmpdir(), 'sluice-never'),
      '--override',
      'num.partitions=many',
    ]);
    assert.equal(code, 2);
    assert.match(stderr, /Invalid value many for configuration num\.partitions/);
  });

  it('rejects an unknown command with usage', async () => {
    const { code, stderr } = await run(['serve']);
    assert.equal(code, 2);
    assert.match(stderr, /unknown command 'serve'/);
    assert.match(stderr, /sluice dev/);
  });
});
