import assert from 'node:assert/strict';
import { join } from 'node:path';
import fc from 'fast-check';
import { FileHandlePool, OffsetOutOfRangeError, PartitionLog } from '../../../storage/index.ts';
import type { LogConfig } from '../../../storage/index.ts';
import { BackgroundErrors, batch, logConfig, recordsOf, withTempDir } from '../../helpers/storage.ts';

// Random sequences of operations checked against the simplest model of a log: a list of
// batches (base offset, record count, a tag in every record value), a start and an end.

interface ModelBatch {
  base: number;
  count: number;
  tag: string;
}

type Op =
  | { kind: 'append'; count: number; valueBytes: number }
  | { kind: 'read'; at: number; maxBytes: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'deleteRecords'; at: number }
  | { kind: 'roll' }
  | { kind: 'reopen'; clean: boolean };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      count: fc.integer({ min: 1, max: 6 }),
      valueBytes: fc.integer({ min: 0, max: 120 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('read' as const),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      maxBytes: fc.integer({ min: 1, max: 1500 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deleteRecords' as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('roll' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reopen' as const), clean: fc.boolean() }) },
);

const config: LogConfig = logConfig({ segmentBytes: 700, indexIntervalBytes: 150, fileDeleteDelayMs: 0 });

/** An index in [0, n) from a fraction in [0, 1] (0 when n is 0). */
function pick(fraction: number, n: number): number {
  return Math.max(0, Math.min(n - 1, Math.floor(fraction * n)));
}

class Model {
  batches: ModelBatch[] = [];
  start = 0;
  end = 0;
  visible(): ModelBatch[] {
    return this.batches.filter((b) => b.base + b.count > this.start);
  }
}

async function readEverything(log: PartitionLog): Promise<{ offset: number; value: string | null }[]> {
  const out: { offset: number; value: string | null }[] = [];
  let offset = log.logStartOffset;
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, 1 << 20);
    assert.ok(r.records.length > 0, `empty read at ${offset} below the log end ${log.logEndOffset}`);
    for (const rec of await recordsOf(r.records)) if (rec.offset >= offset) out.push({ offset: rec.offset, value: rec.value });
    offset = r.nextOffset;
  }
  return out;
}

function expected(model: Model): { offset: number; value: string | null }[] {
  const out: { offset: number; value: string | null }[] = [];
  for (const b of model.visible()) {
    for (let i = 0; i < b.count; i++) if (b.base + i >= model.start) out.push({ offset: b.base + i, value: `${b.tag}:${i}` });
  }
  return out;
}

async function run(dir: string, ops: Op[]): Promise<void> {
  const path = join(dir, 'model-0');
  const background = new BackgroundErrors();
  let pool = new FileHandlePool({ maxOpenFiles: 64, onError: background.sink });
  let log = await PartitionLog.open({ dir: path, config, pool, onBackgroundError: background.sink });
  const model = new Model();
  let tags = 0;
  try {
    for (const op of ops) {
      switch (op.kind) {
        case 'append': {
          const tag = `b${tags++}`;
          const pad = 'p'.repeat(op.valueBytes);
          const records = Array.from({ length: op.count }, (_, i) => ({ key: pad, value: `${tag}:${i}`, timestamp: 1_000 + tags }));
          const info = await log.append(await batch(records), { leaderEpoch: 0 });
          assert.equal(info.firstOffset, model.end);
          model.batches.push({ base: model.end, count: op.count, tag });
          model.end += op.count;
          break;
        }
        case 'read': {
          const at = model.start + pick(op.at, model.end - model.start + 1);
          const r = await log.read(at, op.maxBytes);
          if (at === model.end) {
            assert.equal(r.records.length, 0);
            break;
          }
          const recs = await recordsOf(r.records);
          const holding = model.batches.find((b) => b.base <= at && at < b.base + b.count)!;
          assert.equal(r.firstOffset, holding.base);
          assert.equal(recs[0]!.value, `${holding.tag}:0`);
          assert.ok(r.records.length <= op.maxBytes || recs.length === holding.count, 'only a single first batch may exceed maxBytes');
          break;
        }
        case 'truncate': {
          const at = model.start + pick(op.at, model.end - model.start);
          await log.truncateTo(at);
          const cut = model.batches.findIndex((b) => b.base + b.count > at);
          if (cut >= 0) {
            model.end = Math.min(at, model.batches[cut]!.base);
            model.batches = model.batches.slice(0, cut);
          }
          model.start = Math.min(model.start, model.end);
          break;
        }
        case 'deleteRecords': {
          log.highWatermark = log.logEndOffset;
          const at = model.start + pick(op.at, model.end - model.start + 1);
          assert.equal(await log.deleteRecordsBefore(at), Math.max(at, model.start));
          model.start = Math.max(at, model.start);
          break;
        }
        case 'roll':
          await log.roll();
          break;
        case 'reopen': {
          const logStartOffset = log.logStartOffset;
          const recoveryPoint = log.recoveryPoint;
          // An unclean reopen recovers from the recovery point captured before closing.
          await log.close();
          await pool.closeAll();
          pool = new FileHandlePool({ maxOpenFiles: 64, onError: background.sink });
          log = await PartitionLog.open({
            dir: path,
            config,
            pool,
            logStartOffset,
            recoveryPoint,
            cleanShutdown: op.clean,
            onBackgroundError: background.sink,
          });
          break;
        }
      }
      assert.equal(log.logEndOffset, model.end, `log end after ${op.kind}`);
      assert.equal(log.logStartOffset, model.start, `log start after ${op.kind}`);
    }
    assert.deepEqual(await readEverything(log), expected(model));
    if (model.start > 0) await assert.rejects(log.read(model.start - 1, 100), OffsetOutOfRangeError);
  } finally {
    await log.close().catch(() => undefined);
    await pool.closeAll();
  }
}

describe('storage/log: random operations against a model', () => {
  it('append / read / truncate / deleteRecords / roll / reopen agree with the model', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), (ops) => withTempDir((dir) => run(dir, ops))),
      { numRuns: 150 },
    );
  });
});
