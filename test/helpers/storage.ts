import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordBatchBuilder } from '../../protocol/records/index.ts';
import type { RecordBatchOptions } from '../../protocol/records/index.ts';
import { type RecordBatch, batchesIn } from '../../protocol/records/batch.ts';
import { iterateRecords, decompressedRecords } from '../../protocol/records/index.ts';
import type { LogConfig } from '../../storage/config.ts';
import type { BackgroundErrorSink } from '../../storage/errors.ts';
import { type Clock, type TimerHandle, systemClock } from '../../storage/clock.ts';
import type { FileContext } from '../../storage/checkpoint.ts';
import { nodeFileSystem } from '../../storage/file-system.ts';
import { FileHandlePool } from '../../storage/file-pool.ts';
import { DEFAULT_LOG_CONFIG } from '../../src/config/topic-config.ts';

export interface TestRecord {
  key?: string | null;
  value?: string | null;
  timestamp?: number;
}

/** One v2 batch (base offset 0, as a producer sends it). */
export async function batch(records: TestRecord[], options: RecordBatchOptions = {}): Promise<Buffer> {
  const b = new RecordBatchBuilder(options);
  for (const r of records) {
    b.add({
      key: r.key == null ? null : Buffer.from(r.key),
      value: r.value === null ? null : Buffer.from(r.value ?? 'v'),
      timestamp: r.timestamp ?? 1_000,
    });
  }
  return b.build();
}

/** A batch of `count` records with values of `valueBytes` bytes. */
export function simpleBatch(count: number, timestamp = 1_000, valueBytes = 10, options: RecordBatchOptions = {}): Promise<Buffer> {
  const records: TestRecord[] = [];
  for (let i = 0; i < count; i++) records.push({ key: `k${i}`, value: 'x'.repeat(valueBytes), timestamp });
  return batch(records, options);
}

export function headers(buf: Buffer): RecordBatch[] {
  return [...batchesIn(buf, true)];
}

export async function recordsOf(buf: Buffer): Promise<{ offset: number; key: string | null; value: string | null; timestamp: number }[]> {
  const out = [];
  for (const b of batchesIn(buf, true)) {
    for (const r of iterateRecords(b, await decompressedRecords(b))) {
      out.push({ offset: r.offset, key: r.key?.toString() ?? null, value: r.value?.toString() ?? null, timestamp: r.timestamp });
    }
  }
  return out;
}

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-storage-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A clock whose wall time is set by hand (timestamps, retention, segment.ms) while its timers
 * and durations are the real ones: the storage tests that wait for a flush.ms timer or a
 * deferred deletion wait for it in real time.
 */
export class ManualClock implements Clock {
  constructor(public nowMs = 1_000_000) {}
  now(): number {
    return this.nowMs;
  }
  monotonicMs(): number {
    return systemClock.monotonicMs();
  }
  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    return systemClock.setTimeout(fn, delayMs);
  }
  clearTimeout(handle: TimerHandle): void {
    systemClock.clearTimeout(handle);
  }
  setImmediate(fn: () => void): void {
    systemClock.setImmediate(fn);
  }
  advance(ms: number): void {
    this.nowMs += ms;
  }
}

/** A whole LogConfig: Kafka's topic defaults (from the config definitions) with `overrides`. */
export function logConfig(overrides: Partial<LogConfig> = {}): LogConfig {
  return { ...DEFAULT_LOG_CONFIG, ...overrides };
}

/** Collects what storage reports to its BackgroundErrorSink, for a test to assert on. */
export class BackgroundErrors {
  readonly reported: { err: unknown; what: string }[] = [];
  readonly sink: BackgroundErrorSink = (err, what) => {
    this.reported.push({ err, what });
  };
  get whats(): string[] {
    return this.reported.map((r) => r.what);
  }
}

/** The real disk as a file context of its own (its own queue of atomic replacements). */
export function realDisk(): FileContext {
  return { fileSystem: nodeFileSystem, replacing: new Map() };
}

/** A file context on the real disk whose logs take their time and timers from `clock`. */
export function poolWith(clock: Clock, onError: BackgroundErrorSink): FileHandlePool {
  return new FileHandlePool({ onError, clock });
}
