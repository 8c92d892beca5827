import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { sluiceCommand } from '../../helpers/sluice-cli.ts';
import { freePort } from '../../helpers/wait.ts';

// `sluice container`, the container image's command, as a process on this machine: the
// environment Testcontainers' KafkaContainer gives a cp-kafka 8 image, on free ports.

const READY_TIMEOUT_MS = 30_000;
const CLUSTER_ID = '4L6g3nShT-eMCtK--X86sw';

interface Run {
  code: Promise<number | null>;
  stdout: () => string;
  stderr: () => string;
  ready: Promise<void>;
  stop: () => Promise<number | null>;
}

function start(env: NodeJS.ProcessEnv): Run {
  const cmd = sluiceCommand(['container']);
  const child = spawn(cmd.command, cmd.args, { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const code = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no ready line after ${READY_TIMEOUT_MS} ms\n${out}\n${err}`));
    }, READY_TIMEOUT_MS);
    child.stdout!.on('data', () => {
      if (out.includes('sluice ready: ')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void code.then((c) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${c} before the ready line\n${out}\n${err}`));
    });
  });
  ready.catch(() => undefined);
  return {
    code,
    ready,
    stdout: () => out,
    stderr: () => err,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return code;
    },
  };
}

describe('sluice container (the CLI process, configured from KAFKA_* variables)', function () {
  this.timeout(60_000);
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let plaintextPort: number;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sluice-container-'));
    const [plaintext, broker, controller] = [await freePort(), await freePort(), await freePort()];
    plaintextPort = plaintext;
    env = {
      KAFKA_LISTENERS: `PLAINTEXT://0.0.0.0:${plaintext},BROKER://0.0.0.0:${broker},CONTROLLER://0.0.0.0:${controller}`,
      KAFKA_ADVERTISED_LISTENERS: `BROKER://localhost:${broker},PLAINTEXT://127.0.0.1:${plaintext}`,
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      KAFKA_INTER_BROKER_LISTENER_NAME: 'BROKER',
      KAFKA_BROKER_ID: '1',
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_CONTROLLER_QUORUM_VOTERS: `1@localhost:${controller}`,
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_NUM_PARTITIONS: '2',
      KAFKA_LOG_DIRS: dataDir,
      CLUSTER_ID,
    };
  });

  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('formats the storage with CLUSTER_ID, serves kafkajs, and keeps its id across a restart', async () => {
    for (const attempt of ['first start', 'restart']) {
      const run = start(env);
      try {
        await run.ready;
        assert.match(
          run.stderr(),
          attempt === 'first start'
            ? new RegExp(`formatted ${dataDir} with cluster id ${CLUSTER_ID}`)
            : new RegExp(`${dataDir} is already formatted \\(cluster id ${CLUSTER_ID}\\)`),
        );
        const kafka = new Kafka({ clientId: 'container-cli-test', brokers: [`127.0.0.1:${plaintextPort}`], logLevel: logLevel.NOTHING });
        const admin = kafka.admin();
        await admin.connect();
        const producer = kafka.producer();
        try {
          const cluster = await admin.describeCluster();
          assert.equal(cluster.clusterId, CLUSTER_ID);
          assert.deepEqual(
            cluster.brokers.map((b) => `${b.host}:${b.port}`),
            [`127.0.0.1:${plaintextPort}`],
          );
          await producer.connect();
          const [ack] = await producer.send({ topic: 'from-env', acks: -1, messages: [{ value: attempt }] });
          assert.equal(ack!.errorCode, 0);
          // KAFKA_NUM_PARTITIONS reached the broker as num.partitions.
          const [topic] = (await admin.fetchTopicMetadata({ topics: ['from-env'] })).topics;
          assert.equal(topic!.partitions.length, 2);
        } finally {
          await producer.disconnect();
          await admin.disconnect();
        }
      } finally {
        assert.equal(await run.stop(), 0, run.stderr());
      }
    }
    assert.match(await readFile(join(dataDir, 'meta.properties'), 'utf8'), new RegExp(`^cluster\\.id=${CLUSTER_ID}$`, 'm'));
  });

  it("exits 2 with cp-kafka's message when a required variable is missing", async () => {
    const { CLUSTER_ID: _, ...withoutClusterId } = env;
    const run = start(withoutClusterId);
    assert.equal(await run.code, 2);
    assert.match(run.stderr(), /^sluice: CLUSTER_ID is required\./m);
  });
});
