import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { batchesIn } from '../../../protocol/records/batch.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { PartitionLog } from '../../../storage/log.ts';
import { ReadBufferPool } from '../../../storage/read-buffers.ts';
import { BackgroundErrors, logConfig } from '../../helpers/storage.ts';

const KIB = 1024;
const MIB = 1024 * KIB;

describe('ReadBufferPool', () => {
  it('hands a released buffer to the next read of its size class, and never one still leased', () => {
    const pool = new ReadBufferPool(8 * MIB);
    const first = pool.lease();
    const a = first.take(MIB + 20 * KIB);
    assert.equal(a.length, MIB + 20 * KIB);
    const second = pool.lease();
    const b = second.take(MIB + 10 * KIB);
    assert.notEqual(b.buffer, a.buffer, 'a buffer still leased is not handed out again');
    first.release();
    assert.ok(pool.idleBytes >= MIB + 20 * KIB);
    const third = pool.lease();
    const c = third.take(MIB + 1);
    assert.equal(c.buffer, a.buffer, 'the released buffer is reused for a read of the same class');
    assert.equal(c.length, MIB + 1);
    assert.equal(pool.idleBytes, 0);
  });

  it('keeps at most its retained bytes idle, and does not pool small or huge reads', () => {
    const pool = new ReadBufferPool(3 * MIB);
    const lease = pool.lease();
    for (let i = 0; i < 4; i++) lease.take(MIB);
    lease.take(4 * KIB);
    lease.take(32 * MIB);
    lease.release();
    assert.equal(pool.idleBytes, 3 * MIB);
    pool.lease().take(4 * KIB);
    assert.equal(pool.idleBytes, 3 * MIB, 'a small read does not take a pooled buffer');
  });

  it('a size class always fits the read and wastes less than a quarter of it (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 64 * KIB, max: 16 * MIB }), (size) => {
        const pool = new ReadBufferPool(64 * MIB);
        const buf = pool.lease().take(size);
        assert.equal(buf.length, size);
        assert.ok(buf.buffer.byteLength >= size && buf.buffer.byteLength < size * 1.25 + 1);
      }),
    );
  });

  it('log reads into leased buffers return the same batches as reads without them, across reuse', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-read-buffers-'));
    const log = await PartitionLog.open({ dir, config: logConfig(), onBackgroundError: new BackgroundErrors().sink });
    try {
      for (let b = 0; b < 64; b++) {
        const value = Buffer.alloc(4 * KIB, b);
        await log.append(
          await buildRecordBatch(
            {},
            Array.from({ length: 8 }, () => ({ value, timestamp: 0 })),
          ),
        );
      }
      const pool = new ReadBufferPool(8 * MIB);
      for (const offset of [0, 8, 100, 256, 504]) {
        const plain = await log.read(offset, 128 * KIB);
        const lease = pool.lease();
        const leased = await log.read(offset, 128 * KIB, undefined, true, lease);
        assert.ok(leased.records.equals(plain.records), `offset ${offset}`);
        assert.ok([...batchesIn(leased.records)].every((batch) => batch.isCrcValid()));
        lease.release();
      }
    } finally {
      await log.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
