import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileRaftLog, snapshotFileName } from '../../../src/metadata/raft/file-log.ts';
import { FileQuorumStateStore } from '../../../src/metadata/raft/quorum-state.ts';
import { decodeRaftBatches, encodeRaftBatch, type RaftLog } from '../../../src/metadata/raft/log.ts';
import { FakeCluster } from './fake-cluster.ts';
import { BackgroundErrors } from '../../helpers/storage.ts';
import { MemoryFileSystem } from '../../../storage/memory-file-system.ts';

const background = new BackgroundErrors();

const values = (...xs: string[]) => xs.map((x) => Buffer.from(x));
const contents = (log: FileRaftLog) => log.read(0, Infinity).flatMap((b) => b.records.map(String));

describe('raft log on the storage engine', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-raftlog-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('encodes batches as v2 record batches with the epoch as partition leader epoch', () => {
    const bytes = encodeRaftBatch({ baseOffset: 7, epoch: 3, appendTimeMs: 1000, control: false, records: values('a', 'bc') });
    assert.equal(bytes.readInt32BE(12), 3);
    assert.equal(bytes.readInt8(16), 2);
    const [batch] = decodeRaftBatches(bytes);
    assert.deepEqual(
      { ...batch!, records: batch!.records.map(String) },
      { baseOffset: 7, epoch: 3, appendTimeMs: 1000, control: false, records: ['a', 'bc'] },
    );
  });

  it('keeps appended batches, epochs and truncations across a reopen', async () => {
    const log = await FileRaftLog.open({ dir, onBackgroundError: background.sink });
    log.appendAsLeader(values('a', 'b'), 1, false, 1);
    log.appendAsLeader(values('c'), 1, false, 2);
    log.appendAsLeader(values('d'), 2, false, 3);
    log.truncateTo(3);
    log.appendAsLeader(values('e', 'f'), 3, false, 4);
    await log.close();
    const reopened = await FileRaftLog.open({ dir, onBackgroundError: background.sink });
    assert.deepEqual(contents(reopened), ['a', 'b', 'c', 'e', 'f']);
    assert.equal(reopened.endOffset, 5);
    assert.equal(reopened.lastFetchedEpoch(), 3);
    assert.deepEqual(reopened.endOffsetForEpoch(2), { epoch: 1, offset: 3 });
    await reopened.close();
  });

  it('keeps every flushed record through an OS crash (flush fsyncs: Raft counts flushed records toward a majority)', async () => {
    const disk = new MemoryFileSystem();
    await disk.mkdir('/meta', { recursive: true });
    const log = await FileRaftLog.open({ dir: '/meta', onBackgroundError: background.sink, fileSystem: disk });
    log.appendAsLeader(values('a', 'b'), 1, false, 1);
    await log.flush();
    log.appendAsFollower([{ baseOffset: 2, epoch: 2, appendTimeMs: 2, control: false, records: values('c') }]);
    await log.flush();
    // The page cache writes back nothing of what was not fsynced.
    disk.crash(() => 0);
    const reopened = await FileRaftLog.open({ dir: '/meta', onBackgroundError: background.sink, fileSystem: disk });
    assert.deepEqual(contents(reopened), ['a', 'b', 'c']);
    await reopened.close();
  });

  it('replaces older snapshots, drops the log below one, and restarts from it', async () => {
    const log = await FileRaftLog.open({ dir, segmentBytes: 100, onBackgroundError: background.sink });
    for (let i = 0; i < 10; i++) log.appendAsLeader(values(`record-${i}`), 1, false, i);
    log.writeSnapshot({ endOffset: 4, epoch: 1 }, Buffer.from('first'));
    log.writeSnapshot({ endOffset: 8, epoch: 1 }, Buffer.from('second'));
    await log.flush();
    const files = await readdir(dir);
    assert.deepEqual(
      files.filter((f) => f.endsWith('.checkpoint')),
      [snapshotFileName({ endOffset: 8, epoch: 1 })],
    );
    await log.close();
    const reopened = await FileRaftLog.open({ dir, segmentBytes: 100, onBackgroundError: background.sink });
    assert.deepEqual(reopened.latestSnapshotId(), { endOffset: 8, epoch: 1 });
    assert.equal(String(reopened.readSnapshot({ endOffset: 8, epoch: 1 })), 'second');
    assert.deepEqual(contents(reopened), ['record-8', 'record-9']);
    await reopened.close();
  });

  it('persists the quorum state as Kafka’s JSON quorum-state file', () => {
    const store = new FileQuorumStateStore(dir);
    assert.equal(store.read(), null);
    store.write({ leaderId: 2, leaderEpoch: 5, votedId: 3, votedDirectoryId: 'AAAAAAAAAAAAAAAAAAAAAA' });
    assert.deepEqual(new FileQuorumStateStore(dir).read(), {
      leaderId: 2,
      leaderEpoch: 5,
      votedId: 3,
      votedDirectoryId: 'AAAAAAAAAAAAAAAAAAAAAA',
    });
  });
});

describe('raft over on-disk logs (three voters)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-raft3-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('replicates, truncates a deposed leader’s suffix on disk and reopens consistent logs', async () => {
    const logs = new Map<number, RaftLog>();
    for (const id of [1, 2, 3]) logs.set(id, await FileRaftLog.open({ dir: join(dir, `node-${id}`), onBackgroundError: background.sink }));
    const cluster = new FakeCluster([1, 2, 3], logs);
    for (const n of cluster.nodes.values()) n.client.start();
    await cluster.clock.advance(5000);
    const old = cluster.leaders()[0]!;
    await Promise.all([old.client.append(values('committed')), cluster.clock.advance(50)]);
    cluster.isolate(old.id);
    old.client.append(values('orphan')).catch(() => {});
    await cluster.clock.advance(10_000);
    const next = cluster.leaders().find((n) => n !== old)!;
    await Promise.all([next.client.append(values('winner')), cluster.clock.advance(50)]);
    cluster.heal();
    await cluster.clock.advance(10_000);
    for (const n of cluster.nodes.values()) {
      await n.client.close();
      await n.log.close();
    }
    for (const id of [1, 2, 3]) {
      const reopened = await FileRaftLog.open({ dir: join(dir, `node-${id}`), onBackgroundError: background.sink });
      assert.deepEqual(
        reopened.read(0, Infinity).flatMap((b) => (b.control ? [] : b.records.map(String))),
        ['committed', 'winner'],
        `node ${id}`,
      );
      await reopened.close();
    }
  });
});
