// Storage engine figures, each a ratio against a ceiling measured in the same run, then the
// absolute numbers:
//   append     1 KiB records in 64 KiB batches vs raw sequential writes of the same bytes,
//              the faster of writeSync and FileHandle.write (target >= 0.8; >= 0.95 of raw
//              write + CRC-32C); then 100 B records one per batch, per append (no worse than before)
//   read       warm log, 1 MiB reads vs raw 1 MiB FileHandle reads of the same file (>= 0.8)
//   lookup     one-batch reads at random offsets, 1,000 segments vs 1 segment (within 2x)
//   open       10,000 idle partition logs: time and resident memory per partition (< 20 KiB)
//   recovery   unclean open time for several unflushed tails, on a small and a large log:
//              it grows with the tail, not with the log
// Run: node --import tsx scripts/bench/storage.ts [--quick] [--only=append,read,lookup,open,recovery]

import { spawnSync } from 'node:child_process';
import { writeSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RecordBatchBuilder, validateBatchAt } from '../../protocol/records/index.ts';
import { LogManager, PartitionLog, type LogConfig } from '../../storage/index.ts';
import { DEFAULT_LOG_CONFIG } from '../../src/config/topic-config.ts';
import { settlePageCache } from './measure.ts';

const MIB = 1024 * 1024;
const quick = process.argv.includes('--quick');
/** `--only=append,read` runs a subset of the figures. */
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const wanted = (figure: string): boolean => only === undefined || only.includes(figure);
const self = fileURLToPath(import.meta.url);
/** Kafka's topic defaults with the bench's overrides; storage takes its config whole. */
const logConfig = (overrides: Partial<LogConfig>): LogConfig => ({ ...DEFAULT_LOG_CONFIG, ...overrides });
const onBackgroundError = (err: unknown, what: string): void => console.error(`storage: ${what} failed`, err);

/** A batch of `records` records of about `recordBytes` bytes each (key, value and framing). */
async function buildBatch(records: number, recordBytes: number): Promise<Buffer> {
  const b = new RecordBatchBuilder();
  const value = Buffer.alloc(recordBytes - 40, 7);
  for (let i = 0; i < records; i++) b.add({ key: Buffer.from(`key-${i}`), value, timestamp: Date.now() });
  return b.build();
}

function seconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function fmtRate(bytesPerSec: number): string {
  return `${(bytesPerSec / MIB).toFixed(0)} MiB/s`;
}

/** Sequential positioned writes of `count` copies of `batch`, one at a time; bytes per second. */
async function rawWrite(path: string, batch: Buffer, count: number, method: 'sync' | 'async'): Promise<number> {
  settlePageCache();
  const fh = await open(path, 'w');
  const t = process.hrtime.bigint();
  let pos = 0;
  for (let i = 0; i < count; i++) {
    if (method === 'sync') writeSync(fh.fd, batch, 0, batch.length, pos);
    else await fh.write(batch, 0, batch.length, pos);
    pos += batch.length;
  }
  const rate = (count * batch.length) / seconds(t);
  await fh.close();
  await rm(path);
  return rate;
}

/**
 * The ceiling is the faster of the two ways Node can write a file sequentially: in place
 * (writeSync) or on the thread pool (FileHandle.write). Both are measured every round.
 */
async function appendFigure(
  root: string,
  batch: Buffer,
  totalBytes: number,
): Promise<{
  ratio: number;
  log: number;
  raw: number;
  rawSync: number;
  rawAsync: number;
  crcSecondsPerByte: number;
}> {
  const count = Math.floor(totalBytes / batch.length);
  const ratios: number[] = [];
  const logRates: number[] = [];
  const rawRates: number[] = [];
  const syncRates: number[] = [];
  const asyncRates: number[] = [];
  for (let round = 0; round < 7; round++) {
    const rawSync = await rawWrite(join(root, `raw-${round}.bin`), batch, count, 'sync');
    const rawAsync = await rawWrite(join(root, `raw-${round}.bin`), batch, count, 'async');
    const raw = Math.max(rawSync, rawAsync);
    const log = await PartitionLog.open({
      dir: join(root, `append-${round}`),
      config: logConfig({ segmentBytes: 256 * MIB }),
      onBackgroundError,
    });
    settlePageCache();
    const t = process.hrtime.bigint();
    for (let i = 0; i < count; i++) await log.append(batch, { leaderEpoch: 0 });
    const bps = (count * batch.length) / seconds(t);
    await log.delete();
    ratios.push(bps / raw);
    logRates.push(bps);
    rawRates.push(raw);
    syncRates.push(rawSync);
    asyncRates.push(rawAsync);
  }
  return {
    ratio: median(ratios),
    log: median(logRates),
    raw: median(rawRates),
    rawSync: median(syncRates),
    rawAsync: median(asyncRates),
    crcSecondsPerByte: crcCost(batch),
  };
}

/** Seconds per byte of the CRC-32C check every appended batch must pass (Kafka checks it too). */
function crcCost(batch: Buffer): number {
  for (let i = 0; i < 200; i++) validateBatchAt(batch, 0, batch.length, true);
  const n = 2000;
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) validateBatchAt(batch, 0, batch.length, true);
  return seconds(t) / (n * batch.length);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function readFigure(root: string, batch: Buffer, totalBytes: number): Promise<{ ratio: number; log: number; raw: number }> {
  const log = await PartitionLog.open({ dir: join(root, 'read-0'), config: logConfig({ segmentBytes: 64 * MIB }), onBackgroundError });
  const count = Math.floor(totalBytes / batch.length);
  for (let i = 0; i < count; i++) await log.append(batch, { leaderEpoch: 0 });
  await log.flush();
  const readLog = async (): Promise<number> => {
    let offset = 0;
    let bytes = 0;
    while (offset < log.logEndOffset) {
      const r = await log.read(offset, MIB);
      bytes += r.records.length;
      offset = r.nextOffset;
    }
    return bytes;
  };
  const readRaw = async (): Promise<number> => {
    let bytes = 0;
    for (const seg of log.allSegments) {
      const fh = await open(seg.logPath, 'r');
      let pos = 0;
      for (;;) {
        // A fresh buffer per read, like the log's result buffers.
        const { bytesRead } = await fh.read(Buffer.allocUnsafe(MIB), 0, MIB, pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
        bytes += bytesRead;
      }
      await fh.close();
    }
    return bytes;
  };
  await readLog();
  await readRaw();
  const ratios: number[] = [];
  const logRates: number[] = [];
  const rawRates: number[] = [];
  for (let round = 0; round < 5; round++) {
    let t = process.hrtime.bigint();
    const raw = (await readRaw()) / seconds(t);
    t = process.hrtime.bigint();
    const bps = (await readLog()) / seconds(t);
    ratios.push(bps / raw);
    logRates.push(bps);
    rawRates.push(raw);
  }
  await log.delete();
  return { ratio: median(ratios), log: median(logRates), raw: median(rawRates) };
}

async function lookupFigure(root: string, batch: Buffer, totalBytes: number): Promise<{ ratio: number; many: number; one: number }> {
  const segmentsWanted = 1000;
  const count = Math.floor(totalBytes / batch.length);
  const perSegment = Math.max(1, Math.floor(count / segmentsWanted));
  const many = await PartitionLog.open({
    dir: join(root, 'lookup-many'),
    config: logConfig({ segmentBytes: perSegment * batch.length }),
    onBackgroundError,
  });
  const one = await PartitionLog.open({
    dir: join(root, 'lookup-one'),
    config: logConfig({ segmentBytes: 1024 * MIB }),
    onBackgroundError,
  });
  for (let i = 0; i < perSegment * segmentsWanted; i++) {
    await many.append(batch, { leaderEpoch: 0 });
    await one.append(batch, { leaderEpoch: 0 });
  }
  const lookups = 20_000;
  const offsets = Array.from({ length: lookups }, () => Math.floor(Math.random() * many.logEndOffset));
  const time = async (log: PartitionLog): Promise<number> => {
    for (const o of offsets.slice(0, 2000)) await log.read(o, 1);
    const t = process.hrtime.bigint();
    for (const o of offsets) await log.read(o, 1);
    return (seconds(t) / lookups) * 1e6;
  };
  const segs = many.segmentCount;
  const ratios: number[] = [];
  let manyUs = 0;
  let oneUs = 0;
  for (let round = 0; round < 3; round++) {
    oneUs = await time(one);
    manyUs = await time(many);
    ratios.push(manyUs / oneUs);
  }
  await many.delete();
  await one.delete();
  ratios.sort((a, b) => a - b);
  console.log(`  (lookup log has ${segs} segments)`);
  return { ratio: ratios[1]!, many: manyUs, one: oneUs };
}

/** Runs in a child process so its memory is not mixed with the other figures. */
async function openChild(dir: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage();
  const t = process.hrtime.bigint();
  const m = await LogManager.startup({
    logDirs: [dir],
    defaultConfig: DEFAULT_LOG_CONFIG,
    onBackgroundError,
    maxOpenFiles: 512,
    loadConcurrency: 32,
  });
  const openSeconds = seconds(t);
  gc?.();
  const after = process.memoryUsage();
  const n = m.allLogs().length;
  console.log(
    JSON.stringify({
      partitions: n,
      openSeconds,
      rssPerPartition: (after.rss - before.rss) / n,
      heapPerPartition:
        (after.heapUsed + after.external + after.arrayBuffers - before.heapUsed - before.external - before.arrayBuffers) / n,
    }),
  );
  await m.shutdown();
}

async function openFigure(root: string, batch: Buffer, partitions: number): Promise<void> {
  const dir = join(root, 'many-partitions');
  const m = await LogManager.startup({ logDirs: [dir], defaultConfig: DEFAULT_LOG_CONFIG, onBackgroundError, maxOpenFiles: 512 });
  for (let p = 0; p < partitions; p++) {
    const log = await m.getOrCreateLog(`topic${p % 100}`, Math.floor(p / 100));
    await log.append(batch, { leaderEpoch: 0 });
  }
  await m.shutdown();
  const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', self, '--open-child', dir], { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`open child failed: ${child.stderr}`);
  const r = JSON.parse(child.stdout.trim().split('\n').pop()!) as {
    partitions: number;
    openSeconds: number;
    rssPerPartition: number;
    heapPerPartition: number;
  };
  console.log(
    `open     ${r.partitions} idle partitions: ${(r.rssPerPartition / 1024).toFixed(1)} KiB resident per partition ` +
      `(target < 20 KiB; JS heap+buffers ${(r.heapPerPartition / 1024).toFixed(1)} KiB), ${r.openSeconds.toFixed(2)} s ` +
      `(${((r.openSeconds / r.partitions) * 1e6).toFixed(0)} us per partition)`,
  );
}

async function recoveryFigure(root: string, batch: Buffer, logMiB: number[], tailMiB: number[]): Promise<void> {
  const rows: string[] = [];
  for (const total of logMiB) {
    for (const tail of tailMiB) {
      if (tail >= total) continue;
      const dir = join(root, `recovery-${total}-${tail}`);
      const config = logConfig({ segmentBytes: 4 * MIB });
      const log = await PartitionLog.open({ dir, config, onBackgroundError });
      const count = Math.floor((total * MIB) / batch.length);
      const flushedCount = Math.floor(((total - tail) * MIB) / batch.length);
      for (let i = 0; i < count; i++) {
        await log.append(batch, { leaderEpoch: 0 });
        if (i === flushedCount) await log.flush();
      }
      const recoveryPoint = log.recoveryPoint;
      await log.close();
      const t = process.hrtime.bigint();
      const recovered = await PartitionLog.open({ dir, config, cleanShutdown: false, recoveryPoint, onBackgroundError });
      const ms = seconds(t) * 1000;
      await recovered.delete();
      rows.push(`  log ${String(total).padStart(4)} MiB, unflushed tail ${String(tail).padStart(3)} MiB: ${ms.toFixed(1)} ms`);
    }
  }
  console.log('recovery after an unclean stop (recovery rescans from the segment holding the recovery point; 4 MiB segments):');
  for (const r of rows) console.log(r);
}

async function main(): Promise<void> {
  if (process.argv[2] === '--open-child') {
    await openChild(process.argv[3]!);
    return;
  }
  // SLUICE_BENCH_DIR picks the file system (e.g. /dev/shm to see CPU cost without the disk).
  const root = await mkdtemp(join(process.env.SLUICE_BENCH_DIR ?? tmpdir(), 'sluice-bench-storage-'));
  try {
    const batch = await buildBatch(16, 1024);
    const total = quick ? 32 * MIB : 256 * MIB;
    if (wanted('append')) {
      const large = await buildBatch(64, 1024);
      const a = await appendFigure(root, large, quick ? 32 * MIB : 128 * MIB);
      console.log(
        `append   ratio ${a.ratio.toFixed(2)} vs raw file write (target >= 0.8): ${fmtRate(a.log)} vs ${fmtRate(a.raw)}, ${large.length} B batches of 1 KiB records`,
      );
      console.log(
        `         raw writes one at a time: ${fmtRate(a.rawSync)} in place (writeSync), ${fmtRate(a.rawAsync)} on the thread pool (FileHandle.write)`,
      );
      const withCrc = 1 / (1 / a.raw + a.crcSecondsPerByte);
      console.log(
        `         ratio ${(a.log / withCrc).toFixed(2)} vs raw write + the CRC-32C check alone (target >= 0.95; ${fmtRate(1 / a.crcSecondsPerByte)} CRC): ceiling ${fmtRate(withCrc)}`,
      );
      const small = await buildBatch(1, 100);
      const s = await appendFigure(root, small, quick ? 2 * MIB : 8 * MIB);
      const perAppend = (rate: number): string => `${((small.length / rate) * 1e6).toFixed(2)} us`;
      console.log(
        `append   ratio ${s.ratio.toFixed(2)} vs raw file write, one 100 B record per batch: ${perAppend(s.log)} vs ${perAppend(s.raw)} per append (${small.length} B batches)`,
      );
    }
    if (wanted('read')) {
      const r = await readFigure(root, batch, total);
      console.log(
        `read     ratio ${r.ratio.toFixed(2)} vs raw file read (target >= 0.8): ${fmtRate(r.log)} vs ${fmtRate(r.raw)}, 1 MiB reads, warm`,
      );
    }
    if (wanted('lookup')) {
      const l = await lookupFigure(root, batch, quick ? 32 * MIB : 128 * MIB);
      console.log(
        `lookup   ratio ${l.ratio.toFixed(2)} 1,000 segments vs 1 segment (target <= 2): ${l.many.toFixed(1)} us vs ${l.one.toFixed(1)} us per one-batch read`,
      );
    }
    if (wanted('open')) await openFigure(root, batch, quick ? 2000 : 10_000);
    if (wanted('recovery')) await recoveryFigure(root, batch, quick ? [16, 64] : [64, 512], quick ? [1, 4] : [1, 8, 32]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

await main();
