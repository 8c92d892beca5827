// A coordinator answers only for the state it loaded, at the leader epoch it loaded it for:
// an offset commit it acknowledges is always in the state that answers OffsetFetch, and a
// coordinator that lost its partition (or holds it at a newer epoch it has not loaded yet)
// answers NOT_COORDINATOR. The group coordinator service runs here on a partition log in
// memory whose appends can be held back, as the ReplicaManager's append queue holds them.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import { RecordBatch } from '../../../protocol/records/index.ts';
import { DEFAULT_GROUP_COORDINATOR_CONFIG } from '../../../src/coordinator/config.ts';
import type { CoordinatorTopicAccess } from '../../../src/coordinator/runtime.ts';
import { GroupCoordinatorService } from '../../../src/coordinator/service.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

const GROUP = 'orders-group';
const config = { ...DEFAULT_GROUP_COORDINATOR_CONFIG, offsetsTopicPartitions: 1 };
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Partition 0 of `__consumer_offsets` as its leader sees it. */
class OffsetsPartition {
  private readonly batches: Buffer[] = [];
  private logEndOffset = 0;
  /** This broker's leader epoch of the partition; null once it no longer leads it. */
  leaderEpoch: number | null = 1;
  holdAppends = false;
  private readonly held: { batch: Buffer; resolve: (offset: number) => void }[] = [];

  readonly access: CoordinatorTopicAccess = {
    partitionLeader: () => null,
    createTopic: async () => 0,
    partitionExists: () => true,
    leaderEpoch: () => this.leaderEpoch,
    append: (_partition, batch) =>
      new Promise<number>((resolve) => {
        // Appends reach the log in order: one queued behind a held one waits for it.
        if (this.holdAppends || this.held.length > 0) this.held.push({ batch, resolve });
        else resolve(this.write(batch));
      }),
    awaitCommitted: async () => true,
    readBatches: (_partition) => {
      const end = this.batches.length;
      const batches = this.batches;
      return (async function* () {
        for (let i = 0; i < end; i++) yield new RecordBatch(batches[i] as Buffer);
      })();
    },
  };

  get heldAppends(): number {
    return this.held.length;
  }

  /** Writes the oldest held append to the log and acknowledges it. */
  releaseOne(): void {
    const next = this.held.shift();
    if (next !== undefined) next.resolve(this.write(next.batch));
  }

  private write(batch: Buffer): number {
    const baseOffset = this.logEndOffset;
    batch.writeBigInt64BE(BigInt(baseOffset), 0);
    this.batches.push(batch);
    this.logEndOffset = new RecordBatch(batch).nextOffset;
    return baseOffset;
  }
}

function coordinatorOn(partition: OffsetsPartition) {
  const svc = new GroupCoordinatorService({ nodeId: 1, config, clock: new ManualClock(), access: partition.access, onError: () => {} });
  const commit = async (offset: bigint): Promise<number> => {
    const [code] = await svc.coordinator.commitOffsets(GROUP, '', null, -1, [
      { topic: 'orders', partition: 0, offset, leaderEpoch: -1, metadata: null, expireTimestampMs: -1 },
    ]);
    return code as number;
  };
  const fetch = () => {
    const { errorCode, offsets } = svc.coordinator.fetchOffsets(GROUP, [{ topic: 'orders', partition: 0 }]);
    return { errorCode, offset: offsets[0]?.offset ?? -1n };
  };
  const lead = async (leaderEpoch: number) => {
    partition.leaderEpoch = leaderEpoch;
    svc.onOffsetsPartitionLeadership(0, true, leaderEpoch);
    await svc.whenLoaded();
  };
  return { svc, commit, fetch, lead };
}

describe('coordinator fencing: an acknowledged commit is never read back lower', () => {
  it('answers NOT_COORDINATOR for a commit whose append lands after a reload at a newer leader epoch read the log', async () => {
    const partition = new OffsetsPartition();
    const { commit, fetch, lead } = coordinatorOn(partition);
    await lead(1);
    assert.equal(await commit(4009n), Errors.NONE.code);

    partition.holdAppends = true;
    const late = commit(4134n);
    await settle();
    assert.equal(partition.heldAppends, 1);
    // Leadership moved away and back between two metadata deltas: a newer epoch, loaded from the
    // log as it is now, without the held append.
    await lead(2);
    assert.equal(fetch().offset, 4009n);
    partition.releaseOne();

    assert.equal(await late, Errors.NOT_COORDINATOR.code, 'a commit the loaded state does not hold is not acknowledged');
    assert.equal(fetch().offset, 4009n);
    partition.holdAppends = false;
    assert.equal(await commit(4134n), Errors.NONE.code, 'the client commits again and the coordinator takes it');
    assert.equal(fetch().offset, 4134n);
  });

  it('answers NOT_COORDINATOR as soon as the partition is led at an epoch it has not loaded, before the coordinator hears of it', async () => {
    const partition = new OffsetsPartition();
    const { commit, fetch, lead } = coordinatorOn(partition);
    await lead(4);
    assert.equal(await commit(7n), Errors.NONE.code);
    partition.leaderEpoch = null;
    assert.deepEqual(fetch(), { errorCode: Errors.NOT_COORDINATOR.code, offset: -1n });
    assert.equal(await commit(8n), Errors.NOT_COORDINATOR.code);
    partition.leaderEpoch = 5;
    assert.equal(fetch().errorCode, Errors.NOT_COORDINATOR.code);
    await lead(5);
    assert.deepEqual(fetch(), { errorCode: Errors.NONE.code, offset: 7n });
  });

  it('answers NOT_COORDINATOR for a commit acknowledged by the log after this broker lost the partition', async () => {
    const partition = new OffsetsPartition();
    const { commit, fetch, lead } = coordinatorOn(partition);
    await lead(1);
    partition.holdAppends = true;
    const late = commit(12n);
    await settle();
    partition.leaderEpoch = null;
    partition.releaseOne();
    assert.equal(await late, Errors.NOT_COORDINATOR.code);
    assert.equal(fetch().errorCode, Errors.NOT_COORDINATOR.code);
  });

  it('holds for any interleaving of commits, held appends, reloads and fetches', async () => {
    const action = fc.constantFrom('commit', 'commit-held', 'release', 'reload', 'fetch');
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 40 }), async (actions) => {
        const partition = new OffsetsPartition();
        const { commit, fetch, lead } = coordinatorOn(partition);
        let epoch = 1;
        await lead(epoch);
        let nextOffset = 1n;
        let acknowledged = -1n;
        const pending: Promise<void>[] = [];
        const send = (offset: bigint) =>
          commit(offset).then((code) => {
            if (code === Errors.NONE.code && offset > acknowledged) acknowledged = offset;
          });
        for (const a of actions) {
          if (a === 'commit' || a === 'commit-held') {
            partition.holdAppends = a === 'commit-held';
            pending.push(send(nextOffset++));
            await settle();
          } else if (a === 'release') {
            partition.releaseOne();
            await settle();
          } else if (a === 'reload') {
            epoch++;
            await lead(epoch);
          } else {
            const { errorCode, offset } = fetch();
            assert.equal(errorCode, Errors.NONE.code);
            assert.ok(offset >= acknowledged, `fetched ${offset} after ${acknowledged} was acknowledged`);
          }
        }
        while (partition.heldAppends > 0) partition.releaseOne();
        await Promise.all(pending);
        const { offset } = fetch();
        assert.ok(offset >= acknowledged, `fetched ${offset} after ${acknowledged} was acknowledged`);
      }),
      { numRuns: 150 },
    );
  });
});
