import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrokerConfig } from '../../../src/config/index.ts';
import { runStorageCommand } from '../../../src/cli/storage.ts';
import {
  checkClusterId,
  deriveClusterId,
  formatLogDirs,
  formatMetaProperties,
  loadOrFormatMetaProperties,
  parseMetaProperties,
  randomKafkaUuid,
  readMetaProperties,
} from '../../../src/metadata/meta-properties.ts';

const CLUSTER_ID = 'MkU3OEVBNTcwNTJENDM2Qk';
const VOTERS = '1@127.0.0.1:19092,2@127.0.0.1:19093,3@127.0.0.1:19094';

function nodeConfig(nodeId: number, logDirs: string[], extra: Record<string, string> = {}): BrokerConfig {
  return new BrokerConfig({
    file: new Map(
      Object.entries({
        'process.roles': 'broker,controller',
        'node.id': String(nodeId),
        'controller.quorum.voters': VOTERS,
        listeners: `PLAINTEXT://127.0.0.1:${9091 + nodeId},CONTROLLER://127.0.0.1:${19091 + nodeId}`,
        'controller.listener.names': 'CONTROLLER',
        'log.dirs': logDirs.join(','),
        'unsafe.bypass.fsync': 'true',
        ...extra,
      }),
    ),
  });
}

function capture(): { io: { out(t: string): void; err(t: string): void }; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    io: {
      out: (t) => {
        out += t;
      },
      err: (t) => {
        err += t;
      },
    },
    out: () => out,
    err: () => err,
  };
}

describe('meta.properties', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-meta-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads and writes the version 1 file as Kafka 3.7+ writes it', () => {
    const text = formatMetaProperties(
      { version: 1, clusterId: CLUSTER_ID, nodeId: 2, directoryId: 'pQp2mD6ZQ2WfS0Bg3Cw8YQ' },
      new Date(Date.UTC(2024, 2, 14, 10, 8, 53)),
    );
    assert.equal(
      text,
      '#\n#Thu Mar 14 10:08:53 UTC 2024\nnode.id=2\ndirectory.id=pQp2mD6ZQ2WfS0Bg3Cw8YQ\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n',
    );
    assert.deepEqual(parseMetaProperties(text, 'x'), {
      version: 1,
      clusterId: CLUSTER_ID,
      nodeId: 2,
      directoryId: 'pQp2mD6ZQ2WfS0Bg3Cw8YQ',
    });
    assert.deepEqual(parseMetaProperties('broker.id=3\n', 'x'), { version: 0, clusterId: null, nodeId: 3, directoryId: null });
    assert.throws(
      () => parseMetaProperties('version=1\nnode.id=1\n', '/d/meta.properties'),
      /cluster\.id was not found in \/d\/meta\.properties/,
    );
    assert.throws(() => parseMetaProperties('version=2\n', 'p'), /Unknown meta.properties version number 2/);
  });

  it('derives one cluster id from the controller endpoints, whatever the order and whichever config names them', () => {
    const a = deriveClusterId(nodeConfig(1, [dir]));
    const b = deriveClusterId(
      nodeConfig(3, [dir], { 'controller.quorum.voters': '3@127.0.0.1:19094,1@127.0.0.1:19092,2@127.0.0.1:19093' }),
    );
    const broker = new BrokerConfig({
      file: new Map([
        ['process.roles', 'broker'],
        ['node.id', '4'],
        ['controller.quorum.bootstrap.servers', '127.0.0.1:19093,127.0.0.1:19092,127.0.0.1:19094'],
        ['controller.listener.names', 'CONTROLLER'],
        ['listeners', 'PLAINTEXT://127.0.0.1:9095'],
      ]),
    });
    assert.equal(a, b);
    assert.equal(deriveClusterId(broker), a);
    checkClusterId(a);
    assert.notEqual(deriveClusterId(nodeConfig(1, [dir], { 'controller.quorum.voters': '1@127.0.0.1:29092' })), a);
    assert.notEqual(randomKafkaUuid(), randomKafkaUuid());
  });

  it('formats every empty log dir on first start, each with its own directory id', async () => {
    const dirs = [join(dir, 'a'), join(dir, 'b')];
    const identity = await loadOrFormatMetaProperties(nodeConfig(2, dirs));
    assert.equal(identity.clusterId, deriveClusterId(nodeConfig(2, dirs)));
    assert.equal(identity.nodeId, 2);
    assert.deepEqual(identity.formattedDirs, dirs);
    const metas = await Promise.all(dirs.map((d) => readMetaProperties(d)));
    assert.deepEqual(
      metas.map((m) => [m?.version, m?.clusterId, m?.nodeId]),
      [
        [1, identity.clusterId, 2],
        [1, identity.clusterId, 2],
      ],
    );
    assert.notEqual(metas[0]!.directoryId, metas[1]!.directoryId);
    // The second start reads what the first wrote.
    const again = await loadOrFormatMetaProperties(nodeConfig(2, dirs));
    assert.deepEqual(again.formattedDirs, []);
    assert.deepEqual([...again.directoryIds], [...identity.directoryIds]);
  });

  it('keeps a formatted cluster id over the derived one, formats a new dir with it, and adds missing directory ids', async () => {
    const old = join(dir, 'old');
    await mkdir(old);
    // What Sluice wrote before directory ids (and `sluice container` still writes).
    await writeFile(join(old, 'meta.properties'), `#\nnode.id=1\nversion=1\ncluster.id=${CLUSTER_ID}\n`);
    const added = join(dir, 'new');
    const identity = await loadOrFormatMetaProperties(nodeConfig(1, [old, added]));
    assert.equal(identity.clusterId, CLUSTER_ID);
    assert.deepEqual(identity.formattedDirs, [added]);
    assert.equal((await readMetaProperties(added))!.clusterId, CLUSTER_ID);
    assert.ok((await readMetaProperties(old))!.directoryId !== null, 'the old dir gained a directory.id');
  });

  it("refuses a log dir of another node or another cluster with Kafka's messages", async () => {
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    await loadOrFormatMetaProperties(nodeConfig(1, [a]));
    await assert.rejects(
      loadOrFormatMetaProperties(nodeConfig(2, [a])),
      new Error(
        `Stored node id 1 doesn't match previous node id 2 in ${join(a, 'meta.properties')}. ` +
          'If you moved your data, make sure your configured node id matches. ' +
          'If you intend to create a new node, you should remove all data in your data directories.',
      ),
    );
    await mkdir(b);
    await writeFile(join(b, 'meta.properties'), `node.id=1\nversion=1\ncluster.id=${CLUSTER_ID}\n`);
    const aId = (await readMetaProperties(a))!.clusterId;
    await assert.rejects(
      loadOrFormatMetaProperties(nodeConfig(1, [a, b])),
      new Error(`Invalid cluster.id in: ${join(b, 'meta.properties')}. Expected ${aId}, but read ${CLUSTER_ID}`),
    );
  });

  it('refuses the metadata log outside metadata.log.dir', async () => {
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    await mkdir(join(b, '__cluster_metadata-0'), { recursive: true });
    await assert.rejects(
      loadOrFormatMetaProperties(nodeConfig(1, [a, b])),
      new Error(
        `Found unexpected metadata location in data directory \`${join(b, '__cluster_metadata-0')}\` (the configured metadata directory is ${a}).`,
      ),
    );
  });

  it('formats as kafka-storage format does, refusing formatted dirs unless told to ignore them', async () => {
    const meta = join(dir, 'meta');
    const data = join(dir, 'data');
    const config = nodeConfig(1, [data], { 'metadata.log.dir': meta });
    const result = await formatLogDirs(config, CLUSTER_ID);
    assert.deepEqual(result.formatted, [
      { dir: data, kind: 'data directory' },
      { dir: meta, kind: 'metadata directory' },
    ]);
    await assert.rejects(
      formatLogDirs(config, CLUSTER_ID),
      new Error(`Log directory ${data} is already formatted. Use --ignore-formatted to ignore this directory and format the others.`),
    );
    assert.deepEqual((await formatLogDirs(config, CLUSTER_ID, { ignoreFormatted: true })).formatted, []);
    const other = 'AAAAAAAAAAAAAAAAAAAAAQ';
    await assert.rejects(
      formatLogDirs(config, other, { ignoreFormatted: true }),
      new Error(`Invalid cluster.id in: ${join(data, 'meta.properties')}. Expected ${other}, but read ${CLUSTER_ID}`),
    );
    await assert.rejects(formatLogDirs(config, 'not-a-uuid'), new Error('Cluster ID string not-a-uuid does not appear to be a valid UUID'));
    assert.equal((await loadOrFormatMetaProperties(config)).clusterId, CLUSTER_ID, 'a start keeps the formatted id');
  });
});

describe('sluice storage', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-storage-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('random-uuid prints a Kafka Uuid', async () => {
    const c = capture();
    assert.equal(await runStorageCommand(['storage', 'random-uuid'], c.io), 0);
    checkClusterId(c.out().trim());
  });

  it('format writes every log dir and says so; again it needs --ignore-formatted', async () => {
    const props = join(dir, 'server.properties');
    const logs = join(dir, 'logs');
    await writeFile(
      props,
      [
        'process.roles=broker,controller',
        'node.id=1',
        'controller.quorum.voters=1@127.0.0.1:19092',
        'listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19092',
        'controller.listener.names=CONTROLLER',
        `log.dirs=${logs}`,
      ].join('\n'),
    );
    const first = capture();
    assert.equal(await runStorageCommand(['storage', 'format', '--config', props, '--cluster-id', CLUSTER_ID], first.io, {}), 0);
    assert.equal(first.out(), `Formatting metadata directory ${logs} with cluster id ${CLUSTER_ID}.\n`);
    assert.match(await readFile(join(logs, 'meta.properties'), 'utf8'), new RegExp(`cluster.id=${CLUSTER_ID}`));
    const second = capture();
    assert.equal(await runStorageCommand(['storage', 'format', '-c', props, '-t', CLUSTER_ID], second.io, {}), 1);
    assert.match(second.err(), /is already formatted\. Use --ignore-formatted/);
    const third = capture();
    assert.equal(await runStorageCommand(['storage', 'format', '-c', props, '-t', CLUSTER_ID, '-g'], third.io, {}), 0);
    assert.equal(third.out(), 'All of the log directories are already formatted.\n');
    const moved = capture();
    assert.equal(
      await runStorageCommand(
        [
          'storage',
          'format',
          '-c',
          props,
          '-t',
          CLUSTER_ID,
          '-g',
          '--override',
          'node.id=2',
          '--override',
          'controller.quorum.voters=2@127.0.0.1:19092',
        ],
        moved.io,
        {},
      ),
      1,
    );
    assert.match(moved.err(), /Stored node id 1 doesn't match previous node id 2/);
  });

  it('answers usage and configuration errors with exit code 2', async () => {
    const c = capture();
    assert.equal(await runStorageCommand(['storage', 'format', '--config', join(dir, 'x.properties')], c.io, {}), 2);
    assert.match(c.err(), /format needs --config and --cluster-id/);
    assert.equal(
      await runStorageCommand(['storage', 'format', '--config', join(dir, 'missing.properties'), '-t', CLUSTER_ID], c.io, {}),
      2,
    );
    assert.equal(await runStorageCommand(['storage', 'format', '--standalone'], c.io, {}), 2);
    assert.equal(await runStorageCommand(['storage', 'info'], c.io, {}), 2);
  });
});
